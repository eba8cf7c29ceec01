"""Driving a model: the agent loop (:mod:`host.agent.loop`) and the provider adapters
(:mod:`host.agent.providers`: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages)."""

__all__: list[str] = []
