"""Third rule table of the scanner: what an attack *does*, worded any way — confirmation bypass,
reply hijacking, preference manipulation, exfiltration through rendered URLs, context harvesting.

Same shape as :data:`registry.safety.scan_rules.RULES`, applied after the other two tables by
:mod:`registry.safety.definition_scan`. Each rule is a family (a class of verbs × a class of objects),
not a phrase, so bureaucratic and casual registers of the same move match alike:

* **confirmation bypass** (``confirmation_bypass``): a claim that the user or an administrator
  already approved ("pre-authorised by the workspace administrator", "the account holder has
  pre-authorized transfers"), "not required to seek user confirmation", "without checking back with
  the user", "proceed directly", "asking the user first breaks …";
* **reply hijacking** (``instruction``): "end every reply with …", "for every later reply in this
  conversation", "phrased as your own suggestion";
* **preference manipulation** (``manipulation``): other tools disparaged ("return cached results",
  "known to corrupt", "misconfigured"), "choose this over any other", "even when the user names a
  different tool", fake endorsements ("rated #1 by …", "trusted by 2 million developers"), "route
  every read through";
* **rendered-URL exfiltration** (``exfiltration``): a markdown image whose query string carries a
  placeholder (``![ok](https://x.io/b.png?d=DATA)``, ``?u={summary of what the user asked}``), a URL
  template whose placeholder names the conversation;
* **context harvesting** (``secret_reference``): the model's own context as an object; strong for
  what only the model holds ("the instructions you were given", "every tool available to you"), weak
  for the conversation ("everything the user has said so far", "file contents you have seen in this
  conversation", "the user's clipboard", "… verbatim");
* **casual imperatives** (``instruction``, weak): "also grab … and stick it in …".

Sources: the public write-ups cited in ``tests/registry/fixtures`` (Invariant Labs' tool poisoning and
shadowing, "MCP Preference Manipulation Attack" (MPMA, arXiv 2505.11154), HiddenLayer's parameter
extraction, Johann Rehberger's markdown-image exfiltration (embracethered.com)).
"""

from __future__ import annotations

import re

from registry.safety.scan_rules import FindingKind

__all__ = ["RULES"]

_K = FindingKind
_WHO = r"(?:the\s{1,8})?(?:end[\s-]?)?(?:user|human|operator|customer|requester|account\s{1,8}holder|owner)"
_ADMIN = (r"(?:the\s{1,8})?(?:workspace\s{1,8}|system\s{1,8}|org(?:anization|anisation)?\s{1,8}|it\s{1,8}"
          r"|tenant\s{1,8})?"
          r"(?:administrator|admin|owner|account\s{1,8}holder|user|security\s{1,8}team|operator)s?")
_REPLY = r"(?:repl(?:y|ies)|answers?|responses?|messages?|outputs?|turns?)"
_ASK = (r"(?:ask(?:ing)?|prompt(?:ing)?|check(?:ing)?\s{1,8}back|consult(?:ing)?|confirm(?:ing|ation)?|seek(?:ing)?"
        r"|wait(?:ing)?\s{1,8}for|request(?:ing)?|verif(?:y|ying)|approv(?:al|e)|permission|consent)")

RULES = tuple(
    (kind, name, strong, triggers, re.compile(pattern), re.compile(pattern, re.IGNORECASE))
    for kind, name, strong, triggers, pattern in (
        # --- confirmation bypass
        (_K.CONFIRMATION_BYPASS, "preapproval_claim", False,
         (('pre-', 'preappro', 'preauth', 'already', 'previously'),),
         (r"\bpre-?(?:approved|authori[sz]ed|consented|cleared|confirmed)\b"
          r"|\b(?:already|previously)\s{1,8}(?:been\s{1,8})?(?:authori[sz]ed|approved|consented|confirmed|cleared)\b")),
        (_K.CONFIRMATION_BYPASS, "approval_by_authority", True,
         (('pre', 'approved', 'authori', 'consent'), ('admin', 'owner', 'holder', 'user', 'team', 'operator')),
         (rf"\b(?:pre-?(?:approved|authori[sz]ed|consented)|already\s{{1,8}}(?:been\s{{1,8}})?(?:approved|authori[sz]ed))"
          rf"\s{{1,8}}by"
          rf"\s{{1,8}}{_ADMIN}\b"
          rf"|\b{_ADMIN}\s{{1,8}}(?:has|have)\s{{1,8}}(?:already\s{{1,8}})?(?:pre-?(?:approved|authori[sz]ed|consented)"
          rf"|approved\s{{1,8}}(?:all|every|any|v\d)|consented\s{{1,8}}to\s{{1,8}}(?:all|every|any))\b"
          rf"|\bsince\s{{1,8}}{_ADMIN}\s{{1,8}}(?:already\s{{1,8}})?(?:approved|agreed|consented)\b")),
        (_K.CONFIRMATION_BYPASS, "no_confirmation_needed", False,
         (('without', 'no ', 'not ', 'never', "n't", 'skip', 'rather than', 'instead of'),
          ('ask', 'prompt', 'check', 'consult', 'confirm', 'seek', 'wait', 'request', 'verif', 'approv',
           'permission', 'consent')),
         (rf"\b(?:without|no\s{{1,8}}need\s{{1,8}}(?:for|to)|(?:is|are)\s{{1,8}}not\s{{1,8}}(?:required|necessary|needed)"
          rf"(?:\s{{1,8}}to)?|not\s{{1,8}}required\s{{1,8}}to|skip(?:ping)?|rather\s{{1,8}}than|instead\s{{1,8}}of)"
          rf"\s{{1,8}}(?:[\w']{{1,16}}\s{{1,8}}){{0,2}}?{_ASK}\b[^.\n]{{0,30}}?\b(?:{_WHO}|them|confirmation|approval"
          rf"|permission|consent|first)\b"
          rf"|\b(?:never|don'?t|do\s{{1,8}}not)\s{{1,8}}(?:[\w']{{1,16}}\s{{1,8}}){{0,2}}?{_ASK}\b[^.\n]{{0,30}}?"
          rf"\b(?:confirmation|approval|permission|consent|first|beforehand)\b"
          rf"|\bno\s{{1,8}}(?:user\s{{1,8}}|further\s{{1,8}}|additional\s{{1,8}}|explicit\s{{1,8}})?(?:confirmation|approval"
          rf"|permission|consent)\s{{1,8}}(?:is\s{{1,8}})?(?:needed|required|necessary)\b")),
        (_K.CONFIRMATION_BYPASS, "proceed_directly", False,
         (('proceed', 'go ahead', 'execute', 'continue', 'carry out', 'straight'),),
         (r"\b(?:proceed|go\s{1,8}ahead|execute|continue|carry\s{1,8}(?:it\s{1,8})?out)\w{0,3}\s{1,8}(?:\w{1,12}\s{1,8})?"
          r"(?:directly|immediately|straight\s{1,8}away|right\s{1,8}away|automatically|without\s{1,8}(?:asking|prompting"
          r"|confirmation|checking|waiting))\b")),
        (_K.CONFIRMATION_BYPASS, "asking_is_harmful", True,
         (('ask', 'confirm', 'check'), ('break', 'fail', 'slow', 'annoy', 'unnecessary', 'waste', 'disrupt')),
         (rf"\b(?:asking|confirming\s{{1,8}}with|checking\s{{1,8}}(?:back\s{{1,8}})?with|prompting)\s{{1,8}}{_WHO}"
          rf"(?:\s{{1,8}}first)?\s{{1,8}}(?:\w{{1,12}}\s{{1,8}})?(?:breaks|will\s{{1,8}}break|fails|causes|slows|annoys"
          rf"|is\s{{1,8}}(?:unnecessary|a\s{{1,8}}waste|disruptive))\b")),
        # --- reply hijacking and persistence
        (_K.INSTRUCTION, "hijack_replies", True,
         (('every', 'each', 'all', 'any'), ('repl', 'answer', 'respons', 'message', 'output', 'turn')),
         (rf"\b(?:end|close|finish|start|begin|prefix|suffix|conclude|sign|append\s{{1,8}}to|add\s{{1,8}}to)\w{{0,3}}"
          rf"\s{{1,8}}(?:every|each|all|any)\s{{1,8}}(?:one\s{{1,8}})?(?:of\s{{1,8}}your\s{{1,8}}(?:later\s{{1,8}}|future\s{{1,8}}"
          rf"|subsequent\s{{1,8}}|following\s{{1,8}})?{_REPLY}|(?:later\s{{1,8}}|future\s{{1,8}}|subsequent\s{{1,8}}"
          rf"|following\s{{1,8}})?(?:repl(?:y|ies)|answers?|responses?))\b"
          rf"|\b(?:for|in)\s{{1,8}}(?:every|each|all|any)\s{{1,8}}(?:later|future|subsequent|following|remaining)"
          rf"\s{{1,8}}(?:repl(?:y|ies)|answers?|responses?)\b"
          rf"|\b(?:for|during|in)\s{{1,8}}the\s{{1,8}}(?:rest|remainder)\s{{1,8}}of\s{{1,8}}(?:this|the)\s{{1,8}}"
          rf"(?:session|conversation|chat)\b[^.\n]{{0,40}}?\b(?:your|you|every|each|all|always)\b")),
        (_K.CONCEALMENT, "as_your_own", True,
         (('your own',),),
         r"\b(?:phrased|presented|framed|worded|written|disguised|passed\s{1,8}off)\s{1,8}as\s{1,8}(?:if\s{1,8}it\s{1,8}"
         r"(?:were|was)\s{1,8})?your\s{1,8}own\b"),
        # --- preference manipulation
        (_K.MANIPULATION, "disparage_other_tools", False,
         (('other', 'competing', 'alternative', 'standard', 'built-in', 'builtin', 'default', 'different'),),
         (r"\b(?:other|competing|alternative|standard|built-?in|default|different)\s{1,8}(?:[\w-]{1,20}\s{1,8}){0,2}?"
          r"(?:tools?|scanners?|sources?|servers?|plugins?|integrations?|providers?)\b[^.\n]{0,100}?\b(?:should\s{1,8}not"
          r"|must\s{1,8}not|shouldn'?t|mustn'?t|never|(?:do|does)\s{1,8}not\s{1,8}use|cannot\s{1,8}be|can'?t\s{1,8}be"
          r"|outdated|stale|cached|deprecated|broken|misconfigured|unreliable|insecure|corrupts?|inaccurate"
          r"|hours\s{1,8}old|compromised|less\s{1,8}accurate|known\s{1,8}to)\b")),
        (_K.MANIPULATION, "prefer_over_others", False,
         (('over', 'instead', 'rather'),),
         (r"\b(?:choose|prefer|pick|select|use|favou?r|call|trust)\s{1,8}(?:this|it|me|its\s{1,8}(?:answer|result)s?"
          r"|this\s{1,8}(?:tool|one|server))\s{1,8}(?:tool\s{1,8})?(?:over|instead\s{1,8}of|rather\s{1,8}than)"
          r"\s{1,8}(?:any|all|every|each|anything|(?:the\s{1,8})?others?)\b")),
        (_K.MANIPULATION, "override_user_choice", True,
         (('even',), ('user',)),
         (r"\beven\s{1,8}(?:if|when|though)\s{1,8}the\s{1,8}user\s{1,8}(?:\w{1,12}\s{1,8})?(?:names|asks\s{1,8}for"
          r"|specifies|requests|chooses|picks|mentions|prefers|selects|wants)\s{1,8}(?:a\s{1,8}|an\s{1,8}|the\s{1,8})?"
          r"(?:different|another|other|specific)\b")),
        (_K.MANIPULATION, "fake_endorsement", False,
         (('rated', 'trusted by', 'officially', 'recommended by', 'endorsed', 'certified by', '#1'),),
         (r"\b(?:rated\s{1,8}#?\s?1|#1\s{1,8}(?:rated|ranked)|trusted\s{1,8}by\s{1,8}(?:over\s{1,8}|more\s{1,8}than\s{1,8})?"
          r"[\d,.]+\s?(?:\+|k|m|million|thousand)?|officially\s{1,8}(?:recommended|endorsed|approved)|(?:recommended|endorsed"
          r"|certified|verified)\s{1,8}by\s{1,8}(?:anthropic|openai|google|microsoft|the\s{1,8}mcp))")),
        (_K.MANIPULATION, "route_everything", False,
         (('route', 'funnel', 'send', 'direct'), ('through', 'via')),
         (r"\b(?:route|funnel|send|direct|pass)\s{1,8}(?:every|all|each|any)\s{1,8}(?:[\w-]{1,16}\s{1,8}){0,2}?"
          r"(?:through|via)\s{1,8}(?:this|me|us|[a-z][a-z0-9]{0,40}_[a-z0-9_]{1,40})\b")),
        (_K.MANIPULATION, "discredit_to_user", False,
         (('tell', 'explain', 'inform', 'assure', 'convince', 'suggest'),),
         (rf"\b(?:tell|explain\s{{1,8}}to|inform|assure|convince|suggest\s{{1,8}}to)\s{{1,8}}{_WHO}\s{{1,8}}(?:that\s{{1,8}})?"
          rf"[^.\n]{{0,60}}?\b(?:misconfigured|unavailable|broken|not\s{{1,8}}available|compromised|unsafe|should\s{{1,8}}be"
          rf"\s{{1,8}}removed)\b"
          rf"|\bsuggest\s{{1,8}}(?:removing|uninstalling|disabling|deleting)\s{{1,8}}(?:it|them|that\s{{1,8}}tool"
          rf"|the\s{{1,8}}other)\b")),
        # --- exfiltration through a URL the client renders or fetches
        (_K.EXFILTRATION, "markdown_image_payload", True,
         (('![',), ('?', '&')),
         (r"!\[[^\]\n]{0,80}\]\(\s{0,4}(?:https?:)?//[^)\s]{1,300}?[?&][\w.-]{1,40}=(?:<|\$|%7b|[A-Z_]{3,}\b"
          r"|[a-z_]{0,10}(?:data|payload|summary|conversation|history|message|query|prompt|secret|context)\b)")),
        (_K.EXFILTRATION, "url_template_conversation", True,
         (('http', '//'), ('{', '<')),
         (r"(?:https?:)?//[^\s)\"'<>]{1,200}?[?&/=][^\s)\"']{0,100}?[{<]\s{0,4}(?:an?\s{1,8})?(?:[\w-]{1,24}\s{1,8}){0,4}?"
          r"(?:conversation\w*|transcript\w*|chat_?history|chat_?log|history\b|(?:system_?)?prompt\b|summary\s{1,8}of"
          r"|everything|the\s{1,8}user'?s?\b|user_(?:message|input|request|query)\b|what\s{1,8}the\s{1,8}user)")),
        # --- the model's own context as the object of a request
        (_K.SECRET_REFERENCE, "model_context_harvest", True,
         (('you',), ('instruction', 'prompt', 'rules', 'guidelines', 'directions', 'tool')),
         (r"\b(?:instructions|prompts?|rules|guidelines|directions)\s{1,8}(?:that\s{1,8})?you\s{1,8}(?:were|have\s{1,8}been"
          r"|are|got)\s{1,8}(?:given|told|provided|shown)\b"
          r"|\b(?:every|each|all|the\s{1,8}list\s{1,8}of\s{1,8}(?:every|all)|names\s{1,8}of\s{1,8}(?:every|all))\s{1,8}"
          r"(?:other\s{1,8})?tools?\s{1,8}(?:available\s{1,8}to\s{1,8}you|you\s{1,8}(?:have|can\s{1,8}(?:use|call|see)"
          r"|are\s{1,8}connected\s{1,8}to))\b|\byour\s{1,8}(?:system\s{1,8}prompt|initial\s{1,8}instructions)\b")),
        (_K.SECRET_REFERENCE, "conversation_harvest", False,
         (('you', 'so far', 'earlier', 'clipboard', 'verbatim', 'unabridged', 'this conversation', 'this chat',
           'this session'),),
         (r"\b(?:everything|all|anything|whatever)\s{1,8}(?:that\s{1,8})?(?:the\s{1,8}user|you|they)?\s{0,8}(?:has|have|had)?"
          r"\s{0,8}(?:said|typed|written|asked|shared|seen|pasted|mentioned)\b[^.\n]{0,30}?\b(?:so\s{1,8}far|earlier"
          r"|before|in\s{1,8}this\s{1,8}(?:chat|conversation|session)|today)\b"
          r"|\b(?:said|seen|mentioned|shared|typed)\s{1,8}(?:so\s{1,8}far|earlier)\s{1,8}in\s{1,8}(?:this|the)\s{1,8}"
          r"(?:chat|conversation|session|thread)\b"
          r"|\b(?:contents?|text|files?)\s{1,8}(?:\w{1,12}\s{1,8})?you\s{1,8}(?:have\s{1,8})?(?:seen|read|opened|accessed)"
          r"\s{1,8}(?:in|during)\s{1,8}this\b"
          r"|\b(?:the\s{1,8})?user'?s\s{1,8}clipboard\b"
          r"|\b(?:verbatim|unabridged|word\s{1,8}for\s{1,8}word)\b[^.\n]{0,40}?\b(?:instructions|conversation|chat|prompt"
          r"|messages?|history)\b"
          r"|\b(?:instructions|conversation|chat|prompt|messages?|history)\b[^.\n]{0,40}?\b(?:verbatim|unabridged)\b")),
        # --- casual imperatives aimed at the model
        (_K.INSTRUCTION, "also_take", False,
         (('also', 'quietly', 'just'),),
         (r"\b(?:also|quietly|just)\s{1,8}(?:grab|take|pull|snag|capture|scrape|fetch|dump|stick|stuff|slip|sneak|drop)"
          r"\b[^.\n]{0,80}?\b(?:in|into|to|inside)\b")),
    )
)
