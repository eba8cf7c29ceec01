"""The exact arguments of open approvals, sealed at rest (AES-256-GCM).

An approver must see the exact call, but no secret may reach a file in plain text. The exact
arguments are stored sealed with a key kept in ``<data folder>/approvals.key`` (32 random bytes,
mode 0600, created on first use), bound to the approval's id (associated data), so a copied
value does not open under another approval. A process without the key (another data folder, e.g.
a replica on another machine) cannot open them and shows the redacted copy instead. The sealed
value is dropped once the approval is used, denied or expires.

Format: ``v1:`` + urlsafe base64 of nonce (12 bytes) + ciphertext with tag. Source: NIST SP 800-38D
(GCM), via ``cryptography``'s ``AESGCM``.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["KEY_FILE", "ArgumentSeal"]

KEY_FILE = "approvals.key"
_PREFIX = "v1:"


class ArgumentSeal:
    """Seals and opens approval arguments with one key (see module docstring)."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("the approvals key must be 32 bytes")
        self._aead = AESGCM(key)

    @classmethod
    def for_data_dir(cls, data_dir: Path) -> ArgumentSeal:
        """The seal of ``data_dir`` (its key file created 0600 when missing).

        Raises:
            OSError: the key file cannot be read or created.
        """
        path = Path(data_dir) / KEY_FILE
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            key = secrets.token_bytes(32)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # another process made it first: use theirs
                key = path.read_bytes()
            else:
                try:
                    os.write(fd, key)
                finally:
                    os.close(fd)
        return cls(key)

    def seal(self, text: str, approval_id: str) -> str:
        """``text`` sealed for ``approval_id``."""
        nonce = secrets.token_bytes(12)
        blob = nonce + self._aead.encrypt(nonce, text.encode("utf-8", "surrogatepass"), approval_id.encode())
        return _PREFIX + base64.urlsafe_b64encode(blob).decode()

    def open(self, sealed: str | None, approval_id: str) -> str | None:
        """The text sealed for ``approval_id``, or ``None`` (nothing stored, another key, tampered)."""
        if not sealed or not sealed.startswith(_PREFIX):
            return None
        try:
            blob = base64.urlsafe_b64decode(sealed[len(_PREFIX):])
            return self._aead.decrypt(blob[:12], blob[12:], approval_id.encode()).decode("utf-8", "surrogatepass")
        except (InvalidTag, ValueError):
            return None
