package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// ShutdownGrace is how long Serve lets requests in flight finish once its
// context ends, at the least: never less than the plan timeout, so that a
// plan that may run that long is not cut.
const ShutdownGrace = 30 * time.Second

// Limits of a connection: the header bytes a request may send (a header
// that never ends is refused at 64 KiB, not read until the header timeout),
// and the connections served at once (more wait to be accepted).
const (
	MaxHeaderBytes     = 64 << 10
	DefaultMaxConns    = 1024
	expiredPlansPeriod = time.Minute
)

// Serve serves s on ln until ctx ends (main cancels it on SIGTERM), over TLS
// when certFile and keyFile are given. When ctx ends it stops accepting,
// says not ready on /readyz, and lets the requests in flight finish (for
// ShutdownGrace or the plan timeout, the longer). Slow clients are bounded
// by read and write timeouts, headers by MaxHeaderBytes, connections by
// Options.MaxConns; expired plans are dropped every minute.
func (s *Server) Serve(ctx context.Context, ln net.Listener, certFile, keyFile string) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: s.o.PlanTimeout + time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: MaxHeaderBytes,
	}
	ln = netutil.LimitListener(ln, s.o.MaxConns)
	sweep := time.NewTicker(expiredPlansPeriod)
	defer sweep.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-sweep.C:
				s.plans.sweepNow()
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		if certFile != "" || keyFile != "" {
			done <- hs.ServeTLS(ln, certFile, keyFile)
		} else {
			done <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	s.SetReady(false)
	s.log.Info("shutting down: finishing the requests in flight")
	shutdown, cancel := context.WithTimeout(context.Background(), max(ShutdownGrace, s.o.PlanTimeout))
	defer cancel()
	err := hs.Shutdown(shutdown)
	if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// LoopbackHosts returns the Host header values a server listening on the
// loopback address addr answers to (Options.Hosts), nil for an address
// that is not loopback: on loopback only its own names are answered, so a
// web page elsewhere cannot reach it through a browser (DNS rebinding).
func LoopbackHosts(addr string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil
	}
	var hosts []string
	for _, h := range []string{"localhost", "127.0.0.1", "[::1]"} {
		hosts = append(hosts, h, h+":"+port)
	}
	return hosts
}
