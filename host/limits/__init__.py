"""Fair use: per-user and per-tool rate limits shared across server processes.

:class:`RateLimiter` (:mod:`host.limits.rate`) keeps token buckets in the permission database;
:class:`RateLimitConfig` and :class:`SessionLimits` (:mod:`host.limits.config`) are the
``toolhost.rate_limits`` and ``toolhost.sessions`` blocks of the config file.
"""

from host.limits.config import RateLimitConfig, RateRule, SessionLimits
from host.limits.rate import RateDecision, RateLimiter, rate_limiter_for

__all__ = ["RateDecision", "RateLimitConfig", "RateLimiter", "RateRule", "SessionLimits", "rate_limiter_for"]
