"""uvicorn's HTTP/1.1 protocol with the service's header and body timeouts (:func:`http_protocol`),
and the log lines and answers it writes itself."""
import json

from .limits import BODY_TIMEOUT, HEADER_TIMEOUT, UNREAD_GRACE, log


def _error_body(status: int, message: str) -> bytes:
    return json.dumps({"error": {"status": status, "message": message}}).encode()


def _shown_path(raw: bytes, method: str) -> str:
    """``METHOD /path`` for a log line: the path as sent (percent-encoded), cut at 200 characters."""
    path = raw.decode("ascii", "backslashreplace")
    return f"{method} {path if len(path) <= 200 else path[:200] + '…'}"


def http_protocol(header_timeout: float = HEADER_TIMEOUT, body_timeout: float = BODY_TIMEOUT) -> type:
    """uvicorn's HTTP/1.1 protocol (httptools) with the timeouts it lacks and quiet disconnects:
    a request's headers must be complete within ``header_timeout`` of its first byte (of the
    connection, for a connection's first request; a connection that never sends a byte is closed
    then, silently), else 408 and the connection is closed; a body the application leaves unread
    must be complete within ``body_timeout`` + :data:`UNREAD_GRACE` of the headers, else the
    connection is closed (the application answers 408 first to a body it reads). A client that
    goes away before its answer is complete is one log line. Pass it as ``uvicorn.Config(http=…)``."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415  (uvicorn: 30-55 ms, only serving needs it)

    class Protocol(HttpToolsProtocol):
        _timer = None
        _phase = "idle"              # idle (no byte of a request yet), headers, body, done
        _quiet = False               # closed by us: its end is not a disconnect

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm(header_timeout)

        def _arm(self, delay: float) -> None:
            self._disarm()
            self._timer = self.loop.call_later(delay, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._phase = "headers"
            if self._timer is None:
                self._arm(header_timeout)

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            self._phase = "body"
            if self.pipeline:                   # queued behind an earlier request: its clock starts with it
                self._disarm()
            else:
                self._arm(body_timeout + UNREAD_GRACE)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._phase == "body" and self._timer is None and not self.transport.is_closing():
                self._arm(body_timeout + UNREAD_GRACE)

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._phase = "done"
            self._disarm()

        def _who(self) -> str:
            return f"{self.client[0]}:{self.client[1]}" if self.client else "(unknown)"

        def _request(self) -> str:
            return _shown_path(self.scope.get("raw_path", b""), self.scope.get("method", "?"))

        def _expired(self) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            self._quiet = True
            answering = self.cycle is not None and not self.cycle.response_complete
            if self._phase == "headers" and not answering:
                body = _error_body(408, f"the request's headers did not arrive within {header_timeout:g} s "
                                        "(--header-timeout)")
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                                     b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
                log.warning("client %s sent no complete request headers within %g s; answered 408 and closed",
                            self._who(), header_timeout)
            elif self._phase == "headers":
                log.warning("client %s sent no complete request headers within %g s; closed", self._who(),
                            header_timeout)
            elif self._phase == "body":
                log.warning("client %s sent no complete body within %g s for %s; closed", self._who(),
                            body_timeout, self._request())
            self.transport.close()

        def send_400_response(self, msg: str) -> None:
            self._quiet = True                  # uvicorn logs the invalid request itself
            super().send_400_response(msg)

        def shutdown(self) -> None:
            self._quiet = self._quiet or self.cycle is None or self.cycle.response_complete
            super().shutdown()

        def connection_lost(self, exc) -> None:
            self._disarm()
            if not self._quiet:
                if self.cycle is not None and not self.cycle.response_complete:
                    scope = self.cycle.scope
                    log.warning("client %s disconnected during %s", self._who(),
                                _shown_path(scope.get("raw_path", b""), scope.get("method", "?")))
                elif self._phase == "headers":
                    log.warning("client %s disconnected during a request's headers", self._who())
            super().connection_lost(exc)

    return Protocol
