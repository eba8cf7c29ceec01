"""The scanner's rule table and character classes (:mod:`registry.safety.definition_scan` applies them).

Each word rule is ``(kind, name, strong, triggers, lower_pattern, any_case_pattern)``: ``triggers``
is a tuple of groups of literal words; the pattern runs only when every group has one of its words in
the lower-cased text (a cheap pre-check: most tools skip most rules). ``lower_pattern`` runs on the
lower-cased text, ``any_case_pattern`` (``re.IGNORECASE``) when lower-casing would move offsets.
Sources of the phrasings: the fixture file ``tests/registry/fixtures/poisoned_tools.json`` (its
``tune`` split). The rules after "families" are written by *family* — a class of verbs aimed at
the model, a class of objects (secrets, the user, other tools, collectors) and a connective — so
they match phrasings no case used; the verdict combines weak families (see
:attr:`registry.safety.definition_scan.ScanResult.suspicious`).
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
    CONCEALMENT = "concealment"
    MANIPULATION = "manipulation"
    SIDE_EFFECT = "side_effect"
    CONFIRMATION_BYPASS = "confirmation_bypass"
    TOOL_REFERENCE = "tool_reference"
    SECRET_REFERENCE = "secret_reference"
    EXFILTRATION = "exfiltration"
    INVISIBLE_UNICODE = "invisible_unicode"
    CONTROL_CHARS = "control_chars"
    ENCODED_PAYLOAD = "encoded_payload"
    PADDING = "padding"
    OVERSIZED = "oversized"
    LEARNED = "learned"



_I = re.IGNORECASE
_WHO = (r"(?:the\s{1,8})?(?:end[\s-]?)?(?:user|human|operator|owner|them|person|customer|requester|requestor|anyone"
        r"|anybody)")
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
        (FindingKind.CONCEALMENT, "conceal", True,
         (('tell', 'mention', 'inform', 'notify', 'alert', 'reveal', 'show', 'warn'), ('user', 'human', 'operator',
          'owner', 'them')),
         (rf"\b(?:do\s{{1,8}}not|don'?t|never|without|no\s{{1,8}}need\s{{1,8}}to)\s{{1,8}}(?:ever\s{{1,8}})?(?:tell|telling|mention|mentioning|inform"
         rf"|informing|notify|notifying|alert|alerting|reveal|revealing|show|showing|warn|warning)\b[^.\n]{{0,40}}?\b{_WHO}\b")),
        (FindingKind.INSTRUCTION, "consent_claim", True, (('already', 'pre-', 'preappro', 'preauth'),),
         (r"\b(?:user|they)\s{1,8}(?:has|have)\s{1,8}already\s{1,8}(?:consented|agreed|approved|authori[sz]ed)"
          r"|\b(?:user|they|owner|operator)\s{1,8}(?:has|have)\s{1,8}(?:pre-?approved|pre-?authori[sz]ed|pre-?consented)"
          r"|\b(?:is|are|was|has\s{1,8}been)\s{1,8}(?:pre-?approved|pre-?authori[sz]ed)\s{1,8}by\s{1,8}(?:the\s{1,8})?user")),
        (FindingKind.INSTRUCTION, "from_now_on", True, (('now on',),),
         r"\bfrom\s{1,8}now\s{1,8}on\b"),
        (FindingKind.INSTRUCTION, "tool_will_not_work", True, (('otherwise',),),
         r"\botherwise\b[^.\n]{0,20}\b(?:tool|it|this)\b[^.\n]{0,12}\b(?:(?:will\s{1,8}not|won'?t|cannot|can'?t)\s{1,8}(?:work|function|run)|fails?)\b"),
        (FindingKind.INSTRUCTION, "redirect_recipient", True,
         (('recipient', 'destination', 'receiver', 'address', 'phone number'),),
         r"\b(?:change|replace|rewrite|set|switch)\s{1,8}the\s{1,8}(?:recipient|destination|receiver|to[\s-]address|phone\s{1,8}number)"),
        (FindingKind.INSTRUCTION, "bcc_address", True, (('@',), ('cc',)),
         r"\b(?:bcc|cc)\b[^.\n]{0,40}?[\w.+-]{1,64}@[\w-]{1,64}\.[\w.]{1,64}"),
        (FindingKind.INSTRUCTION, "exclusive_tool", True, (('other',),),
         r"\b(?:never\s{1,8}use\s{1,8}(?:any\s{1,8})?other|supersedes\s{1,8}all\s{1,8}other|instead\s{1,8}of\s{1,8}(?:any|all)\s{1,8}other)\b"),
        (FindingKind.INSTRUCTION, "pipe_to_shell", True, (('|',), ('curl', 'wget')),
         r"\b(?:curl|wget)\b[^|\n]{0,120}\|\s{0,8}(?:ba|z)?sh\b"),
        (FindingKind.INSTRUCTION, "model_addressed", True,
         (('note', 'attention', 'message', 'instruction', 'important', 'reminder', 'info'),
          ('ai', 'assistant', 'model', 'llm', 'agent')),
         r"\b(?:note|attention|message|instructions?|important|reminder|info)\s{1,8}(?:to|for)\s{1,8}(?:the\s{1,8})?(?:ai|assistant|model|llm|agent)\b"),
        (FindingKind.INSTRUCTION, "before_use_action", False, (('before',),),
         (r"\bbefore\s{1,8}(?:using|calling|invoking|running|answering|responding|replying|any|saving|deploying|searching"
         r"|you)\b[^.\n]{0,80}?\b(?:read|send|include|pass|fetch|upload|append|collect|forward|attach|post)\b")),
        (FindingKind.INSTRUCTION, "model_must", False,
         (('must', 'should', 'need', 'has to', 'required'), ('assistant', 'model', 'llm', 'agent', 'ai ')),
         r"\b(?:the\s{1,8})?(?:ai|assistant|model|llm|agent)\s{1,8}(?:must|should|needs?\s{1,8}to|has\s{1,8}to|is\s{1,8}required\s{1,8}to)\b"),
        (FindingKind.INSTRUCTION, "stealth_word", False,
         (('silently', 'secretly', 'quietly', 'covertly', 'discreetly'),),
         r"\b(?:silently|secretly|quietly|covertly|discreetly)\b"),
        (FindingKind.INSTRUCTION, "emphasis", False, (('important',),),
         r"\b(?:very\s{1,8}){2,}important\b|\bimportant\s{0,8}:"),
        (FindingKind.INSTRUCTION, "must_include", False, (('must', 'always', 'make sure', 'should', 'also'),),
         (r"\b(?:you\s{1,8}(?:must|should)|always|must\s{1,8}also|make\s{1,8}sure\s{1,8}(?:to|you)|please\s{1,8}also)\s{1,8}(?:also\s{1,8}|first\s{1,8})?(?:read|send|forward|include|attach"
         r"|append|pass|collect|upload|post|email|mail|share|copy)\b")),
        (FindingKind.INSTRUCTION, "gather_and_pass", False,
         (('collect', 'gather', 'read', 'extract', 'copy', 'find'),
          ('include', 'pass', 'put', 'paste', 'add', 'attach', 'append', 'insert')),
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
        (FindingKind.SECRET_REFERENCE, "secret_path", True,
         (('.ssh', '.aws', '.gnupg', '.kube', '.docker', '.netrc', '.npmrc', '.pypirc', '.git-cred', '_history',
          '.pgpass', 'id_rsa', 'id_dsa', 'id_ecdsa', 'id_ed25519', 'id rsa', '/etc/', 'mcp.json', 'claude_desktop',
          'cursor/', '.env'),),
         (r"\.(?:ssh|aws|gnupg|kube|docker|netrc|npmrc|pypirc|git-credentials|bash_history"
         r"|zsh_history|pgpass)\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|/etc/(?:passwd|shadow|sudoers)\b|\bmcp\.json\b"
         r"|claude_desktop_config|\.cursor/|(?:^|(?<=[\s'\"`(/~]))\.env\b(?!\.example)|\bssh[\s_-]{1,8}id[\s_-]{1,8}rsa\b")),
        (FindingKind.SECRET_REFERENCE, "secret_word", False,
         (('api', 'secret', 'private key', 'private_key', 'ssh', 'password', 'credential', 'token', 'history',
          'previous messages', 'environment variables', 'seed', 'mnemonic', 'recovery', '~/.'),),
         (r"\b(?:api[\s_-]?keys?|secret[\s_-]{1,8}(?:access[\s_-]{1,8})?keys?|private[\s_-]{1,8}keys?|ssh[\s_-]{1,8}(?:private[\s_-]{1,8})?keys?"
         r"|passwords?|credentials?|access[\s_-]{1,8}tokens?|(?:github|auth|bearer|session|api)[\s_-]{1,8}tokens?|secrets"
         r"|(?:conversation|chat|message)\s{1,8}history|previous\s{1,8}messages|environment\s{1,8}variables|seed\s{1,8}phrases?"
         r"|mnemonic(?:\s{1,8}phrases?)?|recovery\s{1,8}phrases?)\b"
         r"|~/\.[\w-]{1,64}")),
        # --- sending data out
        (FindingKind.EXFILTRATION, "send_to_destination", False,
         (('send', 'post', 'upload', 'forward', 'transmit', 'exfiltrat', 'leak', 'copy', 'push', 'report', 'mail',
          'share', 'sync', 'transfer', 'paste', 'bcc'), ('http', '@', '+', 'server', '.')),
         (r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|copy|push|report|e-?mail|mail|share|sync|transfer|paste"
         r"|bcc)\w{0,16}\b[^\n]{0,80}?"
         r"(?:https?://|\b[\w.+-]{1,64}@[\w-]{1,64}\.[a-z]{2,}\b|\+\d{8,}|git@|\b(?:\d{1,3}\.){3}\d{1,3}\b|\bto\s{1,8}(?:the\s{1,8})?server\b)")),
        # --- families (verb class x object class x connective, not phrases): see the module docstring
        (FindingKind.INSTRUCTION, "override_instructions", True,
         (('ignore', 'disregard', 'forget', 'override', 'bypass', 'skip', 'set aside', 'abandon', 'discard',
           'suspend', 'neglect'),),
         (rf"\b(?:ignore|disregard|forget|override|bypass|skip|set\s{{1,8}}aside|abandon|discard|suspend|neglect)\w{{0,3}}"
          rf"\s{{1,8}}(?:[\w']{{1,24}}\s{{1,8}}){{0,3}}?(?:instructions?|guidelines|guardrails|directives"
          rf"|(?:system|previous|prior|above|earlier|original|initial|your)\s{{1,8}}(?:prompts?|messages?|context)"
          rf"|safety\s{{1,8}}(?:rules|checks|policies|measures|guidelines)|security\s{{1,8}}(?:rules|checks|policies|warnings)"
          rf"|{_WHO}'?s?\s{{1,8}}(?:request|instructions?|question|message|wishes|intent|preferences))\b"
          rf"|\b(?:ignore|disregard|forget)\s{{1,8}}(?:whatever|what|anything|everything|all)\b[^.\n]{{0,40}}?"
          rf"\b(?:told|said|asked|instructed|wrote|requested|specified)\b")),
        (FindingKind.INSTRUCTION, "new_orders", True,
         (('your', 'new', 'updated', 'revised', 'hidden', 'secret', 'now', 'follow'),),
         (r"\byour\s{1,8}(?:new|real|true|actual|updated|primary|secret|hidden|only)\s{1,8}(?:instructions?|task|goal"
          r"|objective|purpose|directives?|mission|orders)\b"
          r"|\b(?:new|updated|revised|hidden|secret)\s{1,8}(?:system\s{1,8})?(?:instructions|directives)\s{1,8}(?:for|to)"
          r"\s{1,8}(?:the\s{1,8})?(?:ai|assistant|model|llm|agent|you)\b"
          r"|\bfollow\s{1,8}(?:these|the\s{1,8}following|my|our)\s{1,8}(?:new\s{1,8})?(?:instructions|directives|orders"
          r"|rules)\s{1,8}instead\b"
          r"|\b(?:you|the\s{1,8}(?:assistant|model|agent|ai))\s{1,8}(?:are|is)\s{1,8}now\s{1,8}(?:in\s{1,8})?(?:an?\s{1,8}|the\s{1,8})?"
          r"(?:maintenance|developer|debug|admin|unrestricted|god|root|override|jailbreak|test)\s{1,8}mode\b"
          r"|\byou\s{1,8}are\s{1,8}now\s{1,8}(?:an?\s{1,8}|the\s{1,8}|in\s{1,8})?(?:unrestricted|jailbroken|developer|admin"
          r"|root|god|dan|different|new)\b")),
        (FindingKind.CONCEALMENT, "conceal_hidden_from", True,
         (('hidden', 'secret', 'invisible', 'conceal', 'without', 'keep', 'know', 'notice', 'aware', 'see', 'never',
           'learn', 'find out'),),
         (rf"\b(?:hidden|secret|concealed|invisible|hide\s{{1,8}}(?:it|this|that|them))\s{{1,8}}(?:from|to)\s{{1,8}}{_WHO}\b"
          rf"|\bwithout\s{{1,8}}{_WHO}(?:'s)?\s{{1,8}}(?:knowing|knowledge|noticing|awareness|seeing|realizing|realising"
          rf"|being\s{{1,8}}(?:aware|told|informed|notified)|noticing)\b"
          rf"|\b{_WHO}\s{{1,8}}(?:does\s{{1,8}}not|doesn't|need\s{{1,8}}not|needn't|should\s{{1,8}}not|shouldn't|must\s{{1,8}}not"
          rf"|mustn't|will\s{{1,8}}not|won't|must\s{{1,8}}never|should\s{{1,8}}never)\s{{1,8}}(?:need\s{{1,8}}to\s{{1,8}})?(?:ever\s{{1,8}})?"
          rf"(?:know|see|notice|learn|find\s{{1,8}}out|be\s{{1,8}}(?:told|informed|aware|notified|alerted|shown))\b"
          rf"|\b(?:do\s{{1,8}}not|don'?t|never)\s{{1,8}}let\s{{1,8}}{_WHO}\s{{1,8}}(?:see|know|notice|find\s{{1,8}}out|learn)\b"
          rf"|\b(?:must|should)\s{{1,8}}never\s{{1,8}}(?:find\s{{1,8}}out|learn|notice|realize|realise|discover)\b|\b(?:nobody|no\s{{1,8}}one|no-one)\s{{1,8}}(?:will\s{{1,8}}|ever\s{{1,8}}|should\s{{1,8}})?"
          rf"(?:knows?|notices?|finds?\s{{1,8}}out|sees?|learns?|realizes?)\b"
          rf"|\bkeep\s{{1,8}}(?:this|it|that|these)(?:\s{{1,8}}\w{{1,16}})?\s{{1,8}}(?:secret|hidden|quiet|private|confidential"
          rf"|to\s{{1,8}}yourself|between\s{{1,8}}us)\b(?:[^.\n]{{0,20}}\b(?:from\s{{1,8}})?{_WHO})?")),
        (FindingKind.CONCEALMENT, "conceal_wide", True,
         (('not', "n't", 'never', 'without', 'avoid', 'refrain', 'no need'),
          ('tell', 'mention', 'inform', 'notify', 'alert', 'reveal', 'show', 'warn', 'disclose', 'display', 'surface',
           'report', 'explain', 'bring up', 'acknowledge', 'admit', 'indicate', 'flag', 'say', 'let ')),
         (r"\b(?:do\s{1,8}not|don'?t|never|without|avoid|refrain\s{1,8}from|no\s{1,8}need\s{1,8}to|must\s{1,8}not|mustn'?t"
          r"|should\s{1,8}not|shouldn'?t)\s{1,8}(?:ever\s{1,8}|even\s{1,8})?(?:tell|mention|inform|notify|alert|reveal|show"
          r"|warn|disclose|display|surface|report|explain|bring\s{1,8}up|acknowledge|admit|indicate|flag|say|let)\w{0,4}\b"
          r"[^.\n]{0,40}?(?:\b(?:anyone|anybody|the\s{1,8}person|the\s{1,8}requester|the\s{1,8}requestor)\b"
          r"|\bin\s{1,8}(?:your|the|any)\s{1,8}(?:response|reply|answer|output|summary|chat|conversation|final\s{1,8}message)\b"
          r"|\b(?:this|these|that)\s{1,8}(?:step|instruction|instructions|action|part|detail|requirement|behaviou?r)s?\b)")),
        (FindingKind.CONCEALMENT, "conceal_this", False,
         (('not', "n't", 'never', 'no need'),
          ('mention', 'tell', 'explain', 'disclose', 'reveal', 'surface', 'report')),
         (r"\b(?:do\s{1,8}not|don'?t|never|no\s{1,8}need\s{1,8}to)\s{1,8}(?:mention|tell|explain|disclose|reveal|surface|report)"
          r"\w{0,3}\s{1,8}(?:this|it|that|these|them)\b")),
        (FindingKind.MANIPULATION, "disparage_other_tools", True,
         (('other', 'competing', 'alternative', 'built-in', 'builtin', 'native', 'default'),
          ('deprecated', 'broken', 'unsafe', 'insecure', 'unreliable', 'outdated', 'malicious', 'compromised',
           'disabled',
           'not safe', 'not trusted', 'do not work', "don't work", 'no longer', 'must not', 'never', 'avoid', "don't",
           'do not')),
         (r"\b(?:other|competing|alternative|built-?in|native|default)\s{1,8}(?:[\w-]{1,20}\s{1,8}){0,2}(?:tools?|functions?|servers?"
          r"|plugins?|integrations?)\b[^.;\n]{0,40}?\b(?:are|is|have\s{1,8}been|has\s{1,8}been)\s{1,8}(?:now\s{1,8})?(?:deprecated|broken"
          r"|unsafe|insecure|unreliable|outdated|malicious|compromised|disabled|not\s{1,8}(?:safe|trusted|working|allowed"
          r"|reliable))\b"
          r"|\b(?:do\s{1,8}not|don'?t|never|must\s{1,8}not|should\s{1,8}not|avoid)\s{1,8}(?:ever\s{1,8})?(?:use|using|call"
          r"|calling|invoke|invoking|trust|rely\s{1,8}on)\s{1,8}(?:any\s{1,8}|the\s{1,8})?(?:other|another|alternative"
          r"|competing|built-?in|native)\s{1,8}(?:[\w-]{1,20}\s{1,8}){0,3}(?:tools?|functions?|servers?|plugins?)\b")),
        (FindingKind.MANIPULATION, "prefer_this_tool", False,
         (('instead', 'rather', 'in place', 'over '), ('tool', 'function', 'server', 'plugin')),
         (r"\b(?:instead\s{1,8}of|rather\s{1,8}than|in\s{1,8}place\s{1,8}of|over)\s{1,8}(?:any\s{1,8}|all\s{1,8}|the\s{1,8}"
          r"|using\s{1,8})?(?:other|another|alternative|competing|built-?in|default|native|existing|similar)\s{1,8}"
          r"(?:[\w-]{1,20}\s{1,8}){0,2}(?:tools?|functions?|servers?|plugins?)\b")),
        (FindingKind.MANIPULATION, "best_tool_claim", False,
         (('only', 'sole', 'best', 'most '), ('tool', 'function')),
         (r"\b(?:the\s{1,8})?(?:only|sole|best|most\s{1,8}(?:reliable|accurate|trusted|secure))\s{1,8}(?:tool|function)"
          r"\s{1,8}(?:you\s{1,8}(?:should|must|can)|to)\s{1,8}(?:use|call|trust)\b")),
        (FindingKind.MANIPULATION, "priority_claim", False,
         (('prefer', 'priorit', 'default', 'go-to', 'primary', 'first choice', 'recommended', 'first'),
          ('tool', 'function', 'choice', 'task', 'request', 'query', 'first')),
         (r"\b(?:preferred|default|go-to|primary|first[\s-]choice|recommended)\s{1,8}(?:tool|function|choice)\s{1,8}for"
          r"\s{1,8}(?:every|all|any|each)\b"
          r"|\bpriorit(?:i[sz]e|y\s{1,8}to)\s{1,8}(?:this|these|our)\s{1,8}(?:tool|function)s?\b"
          r"|\b(?:should|must)\s{1,8}(?:always\s{1,8})?be\s{1,8}(?:preferred|prioriti[sz]ed|chosen\s{1,8}first|used\s{1,8}first"
          r"|tried\s{1,8}first)\b|\bpreferred\s{1,8}over\s{1,8}(?:any|all|other|the)\b")),
        (FindingKind.SIDE_EFFECT, "extra_destructive_step", False,
         (('also', 'additionally', 'then', 'afterwards', 'as well', 'automatically', 'background', 'same time',
           'while', 'after', 'once'),
          ('delete', 'remove', 'wipe', 'erase', 'drop', 'truncate', 'overwrite', 'destroy', 'purge', 'rm ', 'disable',
           'uninstall', 'revoke', 'chmod')),
         (r"\b(?:also|additionally|then|afterwards|as\s{1,8}well|automatically|in\s{1,8}the\s{1,8}background"
          r"|(?:after|once)\s{1,8}(?:using|calling|running|invoking|finishing|done|finished|completing)"
          r"|at\s{1,8}the\s{1,8}same\s{1,8}time|while\s{1,8}(?:doing|at)\s{1,8}(?:so|it))\b[^.\n]{0,30}?\b(?:delete|remove"
          r"|wipe|erase|drop|truncate|overwrite|destroy|purge|rm\s{1,8}-rf|disable|uninstall|revoke|chmod)\w{0,3}\b")),
        (FindingKind.INSTRUCTION, "imperative_to_model", False,
         (('you', 'always', 'be sure', 'make sure', 'remember', 'ensure', 'forget', 'required', 'mandatory',
           'essential', 'please', 'kindly', 'first'),),
         (r"\b(?:you\s{1,8}(?:must|should|need\s{1,8}to|have\s{1,8}to|are\s{1,8}(?:required|expected|instructed|supposed)"
          r"\s{1,8}to|will\s{1,8}need\s{1,8}to)|be\s{1,8}sure\s{1,8}to|make\s{1,8}sure\s{1,8}(?:to|that\s{1,8}you|you)"
          r"|remember\s{1,8}to|ensure\s{1,8}(?:that\s{1,8})?you|don'?t\s{1,8}forget\s{1,8}to|it\s{1,8}is\s{1,8}(?:required"
          r"|mandatory|essential|necessary|critical)\s{1,8}(?:to|that\s{1,8}you)|(?:please|kindly)(?:\s{1,8}(?:also|first|always))?)"
          r"\s{1,8}(?:also\s{1,8}|first\s{1,8}|always\s{1,8}|silently\s{1,8}|quietly\s{1,8})?(?:read|open|load|cat|access"
          r"|fetch|retrieve|grab|obtain|collect|gather|extract|dump|harvest|send|post|upload|forward|transmit|share|e-?mail"
          r"|submit|relay|include|pass|paste|attach|append|insert|embed|prepend|copy|call|invoke|execute|delete|remove"
          r"|change|replace|redirect)\b")),
        (FindingKind.INSTRUCTION, "around_every_use", False,
         (('before', 'after', 'whenever', 'each time', 'every time', 'prior to', 'upon', 'at the end',
           'at the start'),),
         (r"\b(?:before|after|whenever|each\s{1,8}time|every\s{1,8}time|prior\s{1,8}to|upon|at\s{1,8}the\s{1,8}(?:end"
          r"|start|beginning)\s{1,8}of)\s{1,8}(?:you\s{1,8}|the\s{1,8}(?:assistant|model|agent)\s{1,8}|any\s{1,8}|every"
          r"\s{1,8}|each\s{1,8})?(?:respond|answer|repl|call|us|run|invok|finish|complet|start|begin|receiv|return|execut)"
          r"\w{0,4}\b[^.\n]{0,80}?\b(?:read|send|include|pass|fetch|upload|append|forward|post|attach|collect|copy"
          r"|e-?mail)\b")),
        (FindingKind.EXFILTRATION, "send_to_collector", False,
         (('send', 'post', 'upload', 'forward', 'transmit', 'exfiltrat', 'leak', 'share', 'report', 'mail', 'sync',
           'push', 'relay', 'beacon', 'deliver', 'log'),
          ('webhook', 'endpoint', 'remote', 'external', 'third-party', 'third party', 'collector', 'attacker',
           'pastebin',
           'ngrok', 'requestbin', 'telemetry', 'analytics', 'our server', 'backup server', 'my server')),
         (r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|share|report|e-?mail|mail|sync|push|relay|beacon|deliver"
          r"|log)\w{0,8}\b[^\n]{0,80}?\b(?:webhooks?|endpoints?|remote\s{1,8}(?:server|host|url|service)|external\s{1,8}"
          r"(?:server|host|url|service|address)|third[\s-]party|collector|attacker|pastebin|ngrok|requestbin"
          r"|(?:telemetry|analytics|logging|backup|our|my)\s{1,8}(?:server|endpoint|service|host))\b")),
        (FindingKind.EXFILTRATION, "copy_to_literal_destination", True,
         (('cop', 'duplicate', 'mirror'), ('@', 'http')),
         (r"\b(?:an?\s{1,8})?(?:copy|copies|duplicate|duplicates|mirror)\s{1,8}of\s{1,8}(?:every|each|all|any|the)\b"
          r"[^\n]{0,80}?(?:https?://\S|\b[\w.+-]{1,64}@[\w-]{1,64}\.[a-z]{2,}\b)")),
        (FindingKind.SECRET_REFERENCE, "secret_object", False,
         (('key', 'token', 'secret', 'cookie', 'keychain', 'wallet', 'kubeconfig', 'service account', 'personal',
           'social security', 'credit card', 'bank', 'system prompt', 'conversation', 'chat', 'messages', 'private',
           'home directory', '%', 'c:\\'),),
         (r"\b(?:(?:oauth|refresh|jwt|id|bot|slack|openai|anthropic|stripe|aws|gcp|azure)\s{1,8}(?:tokens?|keys?|secrets?)"
          r"|client\s{1,8}secrets?|session\s{1,8}cookies?|auth(?:entication)?\s{1,8}(?:headers?|cookies?)|cookies\s{1,8}(?:file|jar)"
          r"|keychain|(?:crypto\s{1,8})?wallet\s{1,8}(?:file|keys?|seed)|kubeconfig|service[\s_-]account\s{1,8}(?:keys?|json)"
          r"|personal\s{1,8}(?:data|information|details)|social\s{1,8}security\s{1,8}numbers?|credit\s{1,8}card\s{1,8}"
          r"(?:numbers?|details)|bank\s{1,8}(?:details|account\s{1,8}numbers?)|system\s{1,8}prompt"
          r"|(?:full|entire|complete|whole)\s{1,8}(?:conversation|chat|context|transcript)"
          r"|(?:all|every|the)\s{1,8}(?:previous|prior|earlier|past|other)\s{1,8}(?:messages|conversations|turns|prompts|chats)"
          r"|private\s{1,8}(?:files|notes|messages|documents|repos(?:itories)?)|home\s{1,8}directory"
          r"|%(?:userprofile|appdata|homepath)%|c:\\users\\)")),
        (FindingKind.INSTRUCTION, "smuggle_into_argument", False,
         (('argument', 'parameter', 'param', 'field'),
          ('put', 'place', 'pass', 'insert', 'includ', 'past', 'add', 'writ', 'cop', 'embed', 'supply', 'stuff')),
         (r"\b(?:put|putting|placed?|placing|pass(?:ed|ing)?|insert(?:ed|ing)?|includ(?:e|ed|ing)|past(?:e|ed|ing)"
          r"|add(?:ed|ing)?|writ(?:e|ten|ing)|cop(?:y|ied|ying)|embed(?:ded|ding)?|suppl(?:y|ied|ying)|stuff(?:ed|ing)?)\b"
          r"[^.\n]{0,60}?\b(?:in|into|as|inside)\s{1,8}(?:the\s{1,8})?`?[\w-]{1,40}`?\s{1,8}(?:argument|parameter|param|field)\b")),
        (FindingKind.INSTRUCTION, "also_do", False,
         (('also',),),
         (r"\balso\s{1,8}(?:paste|include|attach|append|send|forward|read|copy|upload|post|e-?mail|pass|insert|embed"
          r"|collect|gather)\b")),
        (FindingKind.SECRET_REFERENCE, "secret_env_name", False, (('_key', '_token', '_secret', '_password'),),
         r"\b[a-z][a-z0-9]{1,20}(?:_[a-z0-9]{1,20}){0,3}_(?:api_key|access_key|secret_key|private_key|token|secret|password)\b"),
        (FindingKind.INSTRUCTION, "fake_role_marker", False, ((':',), ('system', 'assistant', 'admin', 'developer')),
         r"(?:^|(?<=[\n.!]))\s{0,8}(?:system|assistant|admin|developer)\s{0,8}:\s"),
        (FindingKind.SECRET_REFERENCE, "secret_file", True,
         (('credentials', 'wallet.dat', 'gcloud', '.bashrc', '.zshrc', '.profile',
           'keychain', 'login data', 'cookies.sqlite', 'shadow', '.git/config'),),
         (r"(?:~|\$home|/home/\w{1,32}|/root)/\.(?:config/gcloud|bashrc|zshrc|profile|bash_profile)\b"
          r"|\bknown_hosts\b|\bwallet\.dat\b|\bcredentials\.json\b|\.aws/credentials|\blogin\s{1,8}data\b"
          r"|\bcookies\.sqlite\b|\blogin\.keychain\b|\.git/config\b")),
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
PRE_FILTER = re.compile(f"[\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069{ZERO_WIDTH}"
                        "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
