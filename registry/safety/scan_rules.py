"""The scanner's rule table and character classes (:mod:`registry.safety.definition_scan` applies them).

Each word rule is ``(kind, name, strong, triggers, lower_pattern, any_case_pattern)``: ``triggers``
is a tuple of groups of literal words; the pattern runs only when every group has one of its words in
the lower-cased text (a cheap pre-check: most tools skip most rules). ``lower_pattern`` runs on the
lower-cased text, ``any_case_pattern`` (``re.IGNORECASE``) when lower-casing would move offsets.
Sources of the phrasings: the fixture file ``tests/registry/fixtures/poisoned_tools.json``.
"""

from __future__ import annotations

import enum
import re

__all__ = [
    "BASE64", "BIDI", "CONTROL", "EMOJI_TAG_SEQUENCE", "HEX", "PADDING", "PRE_FILTER", "RULES", "TAG_RUN",
    "ZERO_WIDTH", "ZW_IN_WORD", "ZW_RUN", "FindingKind",
]


class FindingKind(str, enum.Enum):
    """What a finding is about (module docstring table)."""

    INSTRUCTION = "instruction"
    TOOL_REFERENCE = "tool_reference"
    SECRET_REFERENCE = "secret_reference"
    EXFILTRATION = "exfiltration"
    INVISIBLE_UNICODE = "invisible_unicode"
    CONTROL_CHARS = "control_chars"
    ENCODED_PAYLOAD = "encoded_payload"
    PADDING = "padding"
    OVERSIZED = "oversized"



_I = re.IGNORECASE
_WHO = r"(?:the\s{1,8})?(?:user|human|operator|owner|them)"
RULES: tuple[tuple[FindingKind, str, bool, tuple[tuple[str, ...], ...], re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (kind, name, strong, triggers, re.compile(pattern), re.compile(pattern, _I))
    for kind, name, strong, triggers, pattern in (
        # --- instructions aimed at the model
        (FindingKind.INSTRUCTION, "fake_tag", True, (('<', '['),),
         (r"[<\[]\s{0,8}/?\s{0,8}(?:important|system(?:\s{1,8}(?:override|note|message|prompt|instructions?))?|instructions?|admin|secret"
         r"|hidden|sys|override|assistant)\s{0,8}[>\]]")),
        (FindingKind.INSTRUCTION, "html_comment", True, (('<!--',),),
         r"<!--.{0,400}?-->"),
        (FindingKind.INSTRUCTION, "ignore_previous", True, (('ignore', 'disregard', 'forget', 'override'),),
         (r"\b(?:ignore|disregard|forget|override)\s{1,8}(?:all\s{1,8}|any\s{1,8})?(?:the\s{1,8}|your\s{1,8})?(?:previous|prior|above|earlier"
         r"|other|system|original|safety|security)\s{1,8}(?:instructions?|prompts?|rules|directions|guidelines)"
         r"|\b(?:ignore|disregard)\s{1,8}(?:the\s{1,8})?user'?s?\s{1,8}(?:request|instructions?|question|message)")),
        (FindingKind.INSTRUCTION, "conceal", True, (('tell', 'mention', 'inform', 'notify', 'alert', 'reveal', 'show', 'warn'), ('user', 'human', 'operator', 'owner', 'them')),
         (rf"\b(?:do\s{{1,8}}not|don'?t|never|without|no\s{{1,8}}need\s{{1,8}}to)\s{{1,8}}(?:ever\s{{1,8}})?(?:tell|telling|mention|mentioning|inform"
         rf"|informing|notify|notifying|alert|alerting|reveal|revealing|show|showing|warn|warning)\b[^.\n]{{0,40}}?\b{_WHO}\b")),
        (FindingKind.INSTRUCTION, "consent_claim", True, (('already',),),
         r"\b(?:user|they)\s{1,8}(?:has|have)\s{1,8}already\s{1,8}(?:consented|agreed|approved|authori[sz]ed)"),
        (FindingKind.INSTRUCTION, "from_now_on", True, (('now on',),),
         r"\bfrom\s{1,8}now\s{1,8}on\b"),
        (FindingKind.INSTRUCTION, "tool_will_not_work", True, (('otherwise',),),
         r"\botherwise\b[^.\n]{0,20}\b(?:tool|it|this)\b[^.\n]{0,12}\b(?:(?:will\s{1,8}not|won'?t|cannot|can'?t)\s{1,8}(?:work|function|run)|fails?)\b"),
        (FindingKind.INSTRUCTION, "redirect_recipient", True, (('recipient', 'destination', 'receiver', 'address', 'phone number'),),
         r"\b(?:change|replace|rewrite|set|switch)\s{1,8}the\s{1,8}(?:recipient|destination|receiver|to[\s-]address|phone\s{1,8}number)"),
        (FindingKind.INSTRUCTION, "bcc_address", True, (('@',), ('cc',)),
         r"\b(?:bcc|cc)\b[^.\n]{0,40}?[\w.+-]{1,64}@[\w-]{1,64}\.[\w.]{1,64}"),
        (FindingKind.INSTRUCTION, "exclusive_tool", True, (('other',),),
         r"\b(?:never\s{1,8}use\s{1,8}(?:any\s{1,8})?other|supersedes\s{1,8}all\s{1,8}other|instead\s{1,8}of\s{1,8}(?:any|all)\s{1,8}other)\b"),
        (FindingKind.INSTRUCTION, "pipe_to_shell", True, (('|',), ('curl', 'wget')),
         r"\b(?:curl|wget)\b[^|\n]{0,120}\|\s{0,8}(?:ba|z)?sh\b"),
        (FindingKind.INSTRUCTION, "model_addressed", True, (('note', 'attention', 'message', 'instruction'), ('ai', 'assistant', 'model', 'llm', 'agent')),
         r"\b(?:note|attention|message|instruction)\s{1,8}(?:to|for)\s{1,8}(?:the\s{1,8})?(?:ai|assistant|model|llm|agent)\b"),
        (FindingKind.INSTRUCTION, "before_use_action", False, (('before',),),
         (r"\bbefore\s{1,8}(?:using|calling|invoking|running|answering|responding|replying|any|saving|deploying|searching"
         r"|you)\b[^.\n]{0,80}?\b(?:read|send|include|pass|fetch|upload|append|collect|forward|attach|post)\b")),
        (FindingKind.INSTRUCTION, "model_must", False, (('must', 'should', 'need', 'has to', 'required'), ('assistant', 'model', 'llm', 'agent', 'ai ')),
         r"\b(?:the\s{1,8})?(?:ai|assistant|model|llm|agent)\s{1,8}(?:must|should|needs?\s{1,8}to|has\s{1,8}to|is\s{1,8}required\s{1,8}to)\b"),
        (FindingKind.INSTRUCTION, "stealth_word", False, (('silently', 'secretly', 'quietly', 'covertly', 'discreetly'),),
         r"\b(?:silently|secretly|quietly|covertly|discreetly)\b"),
        (FindingKind.INSTRUCTION, "emphasis", False, (('important',),),
         r"\b(?:very\s{1,8}){2,}important\b|\bimportant\s{0,8}:"),
        (FindingKind.INSTRUCTION, "must_include", False, (('must', 'always', 'make sure', 'should', 'also'),),
         (r"\b(?:you\s{1,8}(?:must|should)|always|must\s{1,8}also|make\s{1,8}sure\s{1,8}(?:to|you)|please\s{1,8}also)\s{1,8}(?:also\s{1,8}|first\s{1,8})?(?:read|send|forward|include|attach"
         r"|append|pass|collect|upload|post|email|mail|share|copy)\b")),
        (FindingKind.INSTRUCTION, "gather_and_pass", False,
         (('collect', 'gather', 'read', 'extract', 'copy', 'find'), ('include', 'pass', 'put', 'paste', 'add', 'attach', 'append', 'insert')),
         (r"\b(?:collect|gather|read|extract|copy|find)\b(?:[^.\n]|\.(?=\S)){0,80}?\band\s{1,8}(?:include|pass|put|paste|add|attach|append"
         r"|insert)\s{1,8}(?:them|it|its|their|the)\b")),
        (FindingKind.INSTRUCTION, "skip_confirmation", False, (('without',), ('confirm', 'permission', 'approval')),
         r"\bwithout\s{1,8}(?:asking|requesting|waiting)\s{1,8}(?:for\s{1,8})?(?:confirmation|permission|approval)"),
        (FindingKind.INSTRUCTION, "shadowing", True, (('when',), ('_',)),
         (r"\bwhen(?:ever)?\b[^.\n]{0,60}?\b[a-z]{1,64}_[a-z0-9_]{1,64}\b[^.\n]{0,30}?\b(?:is|are|gets?|has\s{1,8}been)\s{1,8}(?:called|invoked"
         r"|used|run)\b[^.\n]{0,40}?\b(?:you\s{1,8}(?:must|should)|always|make\s{1,8}sure|also|change|add|include|send|forward"
         r"|copy|post)\b")),
        (FindingKind.INSTRUCTION, "trigger_phrase", False, (('when',), ('says', 'types', 'writes', 'mentions')),
         r"\bwhen(?:ever)?\s{1,8}the\s{1,8}user\s{1,8}(?:says|types|writes|mentions)\b"),
        # --- naming other tools in an imperative
        (FindingKind.TOOL_REFERENCE, "call_other_tool", False, (('_',), ('call', 'invoke', 'use', 'run')),
         r"\b(?:call|invoke|use|run)\s{1,8}(?:the\s{1,8})?`?[a-z][a-z0-9]{0,64}_[a-z0-9_]{1,64}`?(?:\s{1,8}tool)?\b"),
        (FindingKind.TOOL_REFERENCE, "when_tool_invoked", False, (('when',), ('_',)),
         (r"\bwhen(?:ever)?\b[^.\n]{0,40}?`?[a-z][a-z0-9]{0,64}_[a-z0-9_]{1,64}`?[^.\n]{0,20}?\b(?:is|are|gets?|has\s{1,8}been)\s{1,8}"
         r"(?:called|invoked|used|run|available)")),
        # --- secrets, credentials and local paths
        (FindingKind.SECRET_REFERENCE, "secret_path", True, (('.ssh', '.aws', '.gnupg', '.kube', '.docker', '.netrc', '.npmrc', '.pypirc', '.git-cred', '_history', '.pgpass', 'id_rsa', 'id_dsa', 'id_ecdsa', 'id_ed25519', 'id rsa', '/etc/', 'mcp.json', 'claude_desktop', 'cursor/', '.env'),),
         (r"\.(?:ssh|aws|gnupg|kube|docker|netrc|npmrc|pypirc|git-credentials|bash_history"
         r"|zsh_history|pgpass)\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|/etc/(?:passwd|shadow|sudoers)\b|\bmcp\.json\b"
         r"|claude_desktop_config|\.cursor/|(?:^|(?<=[\s'\"`(/~]))\.env\b(?!\.example)|\bssh[\s_-]{1,8}id[\s_-]{1,8}rsa\b")),
        (FindingKind.SECRET_REFERENCE, "secret_word", False, (('api', 'secret', 'private key', 'private_key', 'ssh', 'password', 'credential', 'token', 'history', 'previous messages', 'environment variables', 'seed', 'mnemonic', 'recovery', '~/.'),),
         (r"\b(?:api[\s_-]?keys?|secret[\s_-]{1,8}(?:access[\s_-]{1,8})?keys?|private[\s_-]{1,8}keys?|ssh[\s_-]{1,8}(?:private[\s_-]{1,8})?keys?"
         r"|passwords?|credentials?|access[\s_-]{1,8}tokens?|(?:github|auth|bearer|session)[\s_-]{1,8}tokens?|secrets"
         r"|(?:conversation|chat|message)\s{1,8}history|previous\s{1,8}messages|environment\s{1,8}variables|seed\s{1,8}phrases?"
         r"|mnemonic(?:\s{1,8}phrases?)?|recovery\s{1,8}phrases?)\b"
         r"|~/\.[\w-]{1,64}")),
        # --- sending data out
        (FindingKind.EXFILTRATION, "send_to_destination", False, (('send', 'post', 'upload', 'forward', 'transmit', 'exfiltrat', 'leak', 'copy', 'push', 'report', 'mail', 'share', 'sync', 'transfer', 'paste', 'bcc'), ('http', '@', '+', 'server', '.')),
         (r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|copy|push|report|e-?mail|mail|share|sync|transfer|paste"
         r"|bcc)\w{0,16}\b[^\n]{0,80}?"
         r"(?:https?://|\b[\w.+-]{1,64}@[\w-]{1,64}\.[a-z]{2,}\b|\+\d{8,}|git@|\b(?:\d{1,3}\.){3}\d{1,3}\b|\bto\s{1,8}(?:the\s{1,8})?server\b)")),
    )
)

TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")
EMOJI_TAG_SEQUENCE = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f")
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]+")
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u3164\uffa0\u115f\u1160"
ZW_RUN = re.compile(f"[{ZERO_WIDTH}]{{2,}}")
ZW_IN_WORD = re.compile(f"(?<=[A-Za-z0-9])[{ZERO_WIDTH}](?=[A-Za-z0-9])")
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]+")
PADDING = re.compile(r"[ \t\u00a0\u3000]{40,}|(?:[ \t]*\r?\n){12,}")
"""A long run of spaces or line breaks; padding only when visible text follows it on the same line
(spaces) or after it (line breaks): checked by the caller, so no pattern backtracks over the run."""
BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=_-])")
HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){32,}(?![0-9A-Fa-f])")
PRE_FILTER = re.compile(f"[\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069{ZERO_WIDTH}\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
