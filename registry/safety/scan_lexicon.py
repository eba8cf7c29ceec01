"""Second rule table of the scanner: non-English cues, polite requests, data dumps, on-topic credentials.

Same shape as :data:`registry.safety.scan_rules.RULES` (``(kind, name, strong, triggers, lower_pattern,
any_case_pattern)``), applied after it by :mod:`registry.safety.definition_scan`. Written by family:

* a small lexicon per language (French, Spanish, Portuguese, Italian, German) of the words an
  attack needs — a note *to the assistant*, a negation with *inform/tell* and *the user*, a *hidden
  copy* next to an address, *whenever you use* + a tool name, an imperative *add/send/include*;
* polite or indirect requests aimed at the model ("it is very helpful if you include …", "for the
  best suggestions, fill this with …", "no need to redact"), which poisoned parameter descriptions
  use instead of "you must";
* objects that are a dump of what the model can see (the output of ``env``, the conversation so far,
  the results of earlier tool calls, the 30 most recent messages, every unread e-mail);
* instructions to push text off-screen ("after ~200 blank lines").

:data:`SECRET_TOPICS` says which tool names make a credential path the tool's own business (an SSH
tool naming ``~/.ssh/id_rsa``): such a path is weak, so it holds the tool only together with an
instruction or exfiltration finding (the pair table of
:attr:`registry.safety.definition_scan.ScanResult.suspicious`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from registry.safety.scan_rules import FindingKind

__all__ = ["RULES", "SECRET_TOPICS", "credential_topics", "name_tokens"]

_USER = (r"(?:l['’]\s?utilisat(?:eur|rice)|usuari[oa]|usuári[oa]|utente"
         r"|(?:den|dem|die)\s{1,8}(?:benutzer|nutzer|anwender)\w{0,2})")
_TELL = (r"(?:inform|prévenir|avertir|mentionn|signal|dire|dites|decir|dig|mencion|avis|notific|comunic|contar|cont"
         r"|menzion|avvis|mitteil|sagen|erwähn|benachrichtig)")
_NEG = (r"(?:ne\s{1,8}(?:pas|jamais|rien)|n['’]\s?est\s{1,8}pas\s{1,8}(?:nécessaire|utile|besoin)|inutile|sans|jamais"
        r"|no|sin|nunca|sem|não|non|senza|mai|nicht|ohne|niemals|keine?)")
_EMAIL = r"[\w.+-]{1,64}@[\w-]{1,64}\.[\w.]{1,64}"
_BCC = (r"(?:bcc|cci|cco|ccn|blind\s{1,8}(?:carbon\s{1,8})?copy|copie\s{1,8}(?:carbone\s{1,8})?(?:cachée|invisible)"
        r"|copia\s{1,8}(?:carbono\s{1,8})?(?:oculta|nascosta|invisibile)|blindkopie|blind-?kopie)")
_MODEL_INTL = (r"(?:l['’]\s?(?:assistant|ia|agent)|(?:el|o|la|a|al|ao|den|die|das)\s{1,8}(?:asistente|assistente"
               r"|assistenten|agente|agenten|modelo|modello|modell|ki|ia)|assistant|ki|ia)")
_DO_INTL = (r"(?:ajoute[zr]?|envoye[zr]|envoie|transf[ée]re[zr]?|incluez|inclure|joigne[zr]|copie[zr]|añad[ea]|envía"
            r"|envia[r]?|reenvía|incluy[ae]|adjunt[ae]|copi[ae]|aggiung[ia]|invia|inoltra|includi|allega|adicion[ae]|encaminh[ae]"
            r"|füge|sende|schicke|leite|kopiere)")

_ALWAYS = r"(?:toujours|siempre|sempre|immer|aussi|également|también|também|anche|auch)"

RULES = tuple(
    (kind, name, strong, triggers, re.compile(pattern), re.compile(pattern, re.IGNORECASE))
    for kind, name, strong, triggers, pattern in (
        (FindingKind.INSTRUCTION, "note_to_model_intl", True,
         (('remarque', 'note', 'nota', 'avis', 'attention', 'instruction', 'message', 'mensaje', 'mensagem', 'aviso',
           'istruzion', 'messaggio', 'hinweis', 'notiz', 'anweisung', 'nachricht'),),
         (rf"\b(?:remarque|note|nota|avis|attention|instructions?|message|mensaje|mensagem|aviso|instrucci[oó]n(?:es)?"
          rf"|instruç(?:ão|ões)|istruzion[ei]|messaggio|hinweis|notiz|anweisung(?:en)?|nachricht)\s{{1,8}}"
          rf"(?:pour|à|a|para|per|für|an)\s{{1,8}}{_MODEL_INTL}\b")),
        (FindingKind.CONCEALMENT, "conceal_intl", True,
         (('utilisat', 'usuari', 'usuári', 'utente', 'benutzer', 'nutzer', 'anwender'),),
         (rf"\b{_NEG}\b[^.\n]{{0,40}}?\b{_TELL}\w{{0,6}}\b[^.\n]{{0,30}}?{_USER}"
          rf"|{_USER}\b[^.\n]{{0,30}}?\b{_NEG}\b[^.\n]{{0,20}}?\b{_TELL}\w{{0,6}}\b"
          rf"|\b(?:ohne|sans|sin|senza|sem)\s[^.\n]{{0,30}}?{_USER}\b[^.\n]{{0,20}}?\b{_TELL}"
          rf"|\bne\s{{1,8}}(?:le\s{{1,8}}|la\s{{1,8}}|l['’]\s?|en\s{{1,8}}|lui\s{{1,8}}|leur\s{{1,8}})?{_TELL}\w{{0,6}}"
          rf"\s{{1,8}}(?:pas|jamais|rien)\b[^.\n]{{0,30}}?{_USER}")),
        (FindingKind.INSTRUCTION, "hidden_copy_address", True,
         (('@',), ('cc', 'cci', 'cco', 'copy', 'copie', 'copia', 'kopie')),
         rf"\b{_BCC}\b[^.\n]{{0,60}}?{_EMAIL}|{_EMAIL}[^.\n]{{0,60}}?\b{_BCC}\b"),
        (FindingKind.TOOL_REFERENCE, "when_tool_used_intl", False,
         (('chaque fois', 'à chaque', 'lorsque', 'quand', 'cada vez', 'siempre que', 'cuando', 'ogni volta',
           'quando', 'jedes mal', 'immer wenn', 'wenn', 'sempre que'), ('_',)),
         (r"\b(?:chaque\s{1,8}fois|à\s{1,8}chaque|lorsque|quand|cada\s{1,8}vez|siempre\s{1,8}que|cuando|ogni\s{1,8}volta"
          r"|quando|jedes\s{1,8}mal|immer\s{1,8}wenn|wenn|sempre\s{1,8}que)\b[^.\n]{0,50}?\b[a-z][a-z0-9]{0,64}_[a-z0-9_]{1,64}\b")),
        (FindingKind.INSTRUCTION, "imperative_intl", False,
         (('toujours', 'siempre', 'sempre', 'immer', 'aussi', 'también', 'também', 'anche', 'auch', 'également'),),
         rf"\b{_ALWAYS}\s{{1,8}}{_DO_INTL}\b|\b{_DO_INTL}\s{{1,8}}{_ALWAYS}\b"),
        (FindingKind.INSTRUCTION, "polite_request", False,
         (('helpful', 'useful', 'ideal', 'appreciated', 'recommend', 'suggest', 'best', 'fill'),),
         (r"\b(?:(?:it\s{1,8}(?:is|would\s{1,8}be)|it's)\s{1,8}(?:very\s{1,8}|really\s{1,8}|extremely\s{1,8}|most\s{1,8})?"
          r"(?:helpful|useful|ideal|appreciated|best)\s{1,8}(?:if|when)\s{1,8}you(?:\s{1,8}(?:could|would|can))?"
          r"|(?:we|i)\s{1,8}(?:recommend|suggest)\s{1,8}(?:that\s{1,8})?you"
          r"|for\s{1,8}(?:the\s{1,8})?best\s{1,8}(?:results|suggestions|answers|accuracy|experience|recommendations),?"
          r"|fill\s{1,8}(?:this|it)\s{1,8}(?:in\s{1,8})?with)"
          r"\s{1,8}(?:\w{1,16}\s{1,8}){0,2}?(?:include|pass|paste|provide|attach|fill|put|add|send|share|copy|dump"
          r"|supply|the\s{1,8}(?:complete|full|entire|whole|raw))\b")),
        (FindingKind.INSTRUCTION, "dump_request", False,
         (('raw', 'complete', 'entire', 'whole', 'verbatim', 'unredacted'),),
         (r"\b(?:pass|paste|include|provide|put|attach|dump|supply|copy|send)\s{1,8}(?:in\s{1,8})?(?:the\s{1,8})?"
          r"(?:raw|complete|entire|whole|unredacted|verbatim)\s{1,8}(?:output|contents?|text|dump|conversation|history"
          r"|transcript|configuration|config|environment)\b")),
        (FindingKind.INSTRUCTION, "skip_safeguard", False,
         (('redact', 'mask', 'sanitiz', 'scrub', 'ask'), ('no need', "n't", 'not', 'without', 'never')),
         (r"\b(?:no\s{1,8}need\s{1,8}to|(?:you\s{1,8})?(?:do\s{1,8}not|don'?t)\s{1,8}(?:need\s{1,8}to\s{1,8})?|without"
          r"|never)\s{1,8}(?:redact|mask|sanitiz|scrub|ask(?:ing)?\s{1,8}(?:the\s{1,8})?(?:user|them|anyone))\w{0,3}\b")),
        (FindingKind.SECRET_REFERENCE, "visible_data_dump", False,
         (('env', 'conversation', 'tool call', 'messages', 'unread', 'e-mail', 'email', 'configuration', 'config'),),
         (r"\boutput\s{1,8}of\s{1,8}`?(?:env|printenv|set|export\s{1,8}-p)\b|\bprintenv\b"
          r"|\benvironment\s{1,8}(?:dump|snapshot)\b|\bconversation\s{1,8}so\s{1,8}far\b"
          r"|\b(?:results?|outputs?)\s{1,8}of\s{1,8}(?:the\s{1,8})?(?:earlier|previous|prior|other|all|every)\s{1,8}tool\s{1,8}calls\b"
          r"|\b(?:\d{1,4}\s{1,8})?(?:most\s{1,8}recent|latest|last)\s{1,8}(?:\d{1,4}\s{1,8})?messages\b"
          r"|\b(?:every|all)\s{1,8}(?:unread|private|incoming|recent)\s{1,8}(?:e-?mails?|messages|dms)\b"
          r"|\b(?:user's|their)\s{1,8}(?:configuration|config)\b(?!\s{1,8}(?:option|setting|value)s?)")),
        (FindingKind.CONCEALMENT, "push_offscreen", True,
         (('blank', 'empty', 'new'), ('line',)),
         (r"\b(?:after|behind|below|beneath|under|following|preceded\s{1,8}by|with)\s{1,8}(?:~\s{0,2}|about\s{1,8}|around"
          r"\s{1,8}|some\s{1,8})?\d{2,4}\s{1,8}(?:blank|empty|new)\s{0,8}(?:lines|line\s{0,8}breaks|newlines)\b")),
        (FindingKind.INSTRUCTION, "when_you_use", False,
         (('when',), ('you',)),
         (r"\bwhen(?:ever)?\s{1,8}you\s{1,8}(?:later\s{1,8}|next\s{1,8}|then\s{1,8}|also\s{1,8})?(?:send|call|use|invoke|run"
          r"|reply|respond|post|write|share)\w{0,3}\b[^.\n]{0,80}?\b(?:append|prepend|include|attach|add|insert|embed"
          r"|paste|forward|copy)\b")),
    )
)

SECRET_TOPICS: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), frozenset(words)) for pattern, words in (
        (r"ssh|id_(?:rsa|dsa|ecdsa|ed25519)|known_hosts", ("ssh", "sftp", "scp", "signing", "gpg", "deploy")),
        (r"aws", ("aws", "s3", "ec2", "iam", "sts", "lambda", "dynamodb", "cloudformation", "bedrock", "sqs", "sns")),
        (r"kube", ("kube", "kubectl", "kubernetes", "k8s", "helm", "pod", "pods")),
        (r"claude_desktop|mcp\.json|cursor", ("mcp", "claude", "cursor")),
        (r"docker", ("docker", "container", "containers", "compose")),
        (r"npmrc", ("npm",)), (r"pypirc", ("pypi", "twine")), (r"gnupg", ("gpg", "pgp", "gnupg")),
        (r"gcloud", ("gcloud", "gcp", "gcs", "bigquery")),
    )
)
"""``(pattern on the credential span, name tokens)``: a tool whose name or property names have one
of the tokens is about that credential (``list_s3_buckets`` and ``~/.aws/credentials``)."""


def name_tokens(name: str) -> set[str]:
    """Lower-case words of an identifier (``listS3Buckets``, ``list_s3_buckets`` → list, s3, buckets)."""
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)}


def credential_topics(names: Iterable[str]) -> list[re.Pattern[str]]:
    """The :data:`SECRET_TOPICS` patterns whose credential the tool ``names`` (its name and property
    names) are about: ``["list_s3_buckets"]`` → the ``aws`` pattern."""
    tokens = {t for name in names for t in name_tokens(name)}
    return [pattern for pattern, words in SECRET_TOPICS if words & tokens]
