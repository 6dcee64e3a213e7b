"""The Congestion Manager (Balakrishnan, Rahul, Seshan; papers/001).

- ``aimd``: rate-based AIMD no more aggressive than TCP, plus exponential aging.
- ``probe``: the loss-resilient probe/response bookkeeping of Fig. 5.
- ``scheduler``: weighted round-robin sharing a macroflow among its flows.
- ``core``: the sans-IO CM with the API of Fig. 8 (open/request/notify/update/query/close,
  callbacks app_notify and change_rate).
- ``daemon`` / ``client``: the CM as a per-user daemon on a UNIX socket (JSON lines).
"""
