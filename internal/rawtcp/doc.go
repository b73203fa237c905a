// Package rawtcp wraps a TCP connection so that its reads and writes do not enter the Go
// scheduler's system-call state: on Linux they are raw read(2) and write(2) calls on the
// non-blocking socket, made inside syscall.RawConn's Read and Write, which wait in the
// runtime's poller (with the connection's deadlines) while the socket is not ready.
//
// Why: entersyscall wakes the runtime's sysmon thread whenever every P was idle a moment
// before, and a woken sysmon polls every 20 µs for a millisecond or more. A process that waits
// on the network goes idle and wakes up thousands of times a second, and each wake-up is
// followed by a socket read or write, so sysmon never stops polling: over a 100k push to FCM
// it was 23% of pushd's CPU (docs/decisions.md, "Gateway sockets without entersyscall").
//
// A Conn behaves as the *net.TCPConn it wraps, errors included (*net.OpError around the errno,
// os.ErrDeadlineExceeded, net.ErrClosed, io.EOF). On other systems Wrap returns the
// connection unchanged.
package rawtcp
