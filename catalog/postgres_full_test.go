package catalog_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icebloom/icebloom/catalog"
)

// fullServer stands in front of the test's PostgreSQL server and answers
// the first refuse connections as a server at max_connections does: it
// reads the startup message and sends PostgreSQL's own FATAL error
// (SQLSTATE 53300, "sorry, too many clients already"), then closes. Later
// connections are passed to the real server.
type fullServer struct {
	dsn     string // the test's DSN, pointed at the front
	refused atomic.Int64
}

func newFullServer(t *testing.T, dsn string, refuse int64) *fullServer {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	backend := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	u.Host = ln.Addr().String()
	fs := &fullServer{dsn: u.String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				if fs.refused.Load() < refuse {
					fs.refused.Add(1)
					refuseStartup(c)
					return
				}
				up, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { io.Copy(up, c); up.Close() }()
				io.Copy(c, up)
			})
		}
	}()
	return fs
}

// refuseStartup reads a client's startup message, declining an SSL or
// GSSAPI encryption request first as a server without them does, and
// answers the error a PostgreSQL server sends when it has no connection
// slot left.
func refuseStartup(c net.Conn) {
	for {
		var head [8]byte
		if _, err := io.ReadFull(c, head[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(head[:4])
		if code := binary.BigEndian.Uint32(head[4:]); n == 8 && (code == 80877103 || code == 80877104) {
			c.Write([]byte{'N'})
			continue
		}
		if n < 8 || n > 10000 {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(n-8)); err != nil {
			return
		}
		break
	}
	var fields bytes.Buffer
	for _, f := range [][2]string{{"S", "FATAL"}, {"V", "FATAL"}, {"C", "53300"},
		{"M", "sorry, too many clients already"}, {"F", "proc.c"}, {"L", "356"}, {"R", "InitProcess"}} {
		fields.WriteString(f[0] + f[1] + "\x00")
	}
	fields.WriteByte(0)
	msg := []byte{'E', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[1:], uint32(4+fields.Len()))
	c.Write(append(msg, fields.Bytes()...))
}

// TestOpenWaitsForAConnectionSlot: a PostgreSQL server that has no
// connection to spare, as when the 256 pods of a sharded run start at once
// against a server of max_connections 100, delays the opening of the
// catalog, with a warning per retry, instead of failing it (before, the
// first refusal failed the process: "remaining connection slots are
// reserved"); a server that stays full fails it within the time budget,
// with its error.
func TestOpenWaitsForAConnectionSlot(t *testing.T) {
	srv := newPGServer(t)
	full := newFullServer(t, srv.dsn, 3)
	opts := srv.options()
	opts.URI = full.dsn
	var logged bytes.Buffer
	cat, err := catalog.Open(t.Context(), opts, catalog.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatalf("open through a server refusing 3 connections: %v", err)
	}
	defer cat.(interface{ Close() error }).Close()
	if _, err := cat.ListNamespaces(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if n := full.refused.Load(); n != 3 {
		t.Fatalf("%d connections refused, want 3", n)
	}
	if got := strings.Count(logged.String(), "open failed; retrying"); got < 1 || !strings.Contains(logged.String(), "catalog=default") {
		t.Fatalf("%d retry warnings naming the catalog, want one a failed attempt:\n%s", got, logged.String())
	}

	stays := newFullServer(t, srv.dsn, 1<<40)
	opts.URI = stays.dsn
	_, err = catalog.Open(t.Context(), opts, catalog.WithTimeBudget(time.Second))
	var state interface{ SQLState() string }
	if err == nil || !errors.As(err, &state) || state.SQLState() != "53300" || !strings.Contains(err.Error(), "time budget") {
		t.Fatalf("open through a server that stays full: %v, want its 53300 after the time budget", err)
	}
}
