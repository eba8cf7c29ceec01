"""The stdio wire of ``toolhost serve --stdio``: line framing and answers to malformed lines."""
