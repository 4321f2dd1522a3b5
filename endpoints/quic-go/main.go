// tlab-quic-go: the lab's HTTP/3 endpoint on quic-go's API (docs/stacks.md). quic-go's
// own example server and client fetch only (no upload, no bulk for a duration, no
// timings), so this small program does what the lab's flows need and nothing else:
//
//	tlab-quic-go server --bind ADDR:PORT --cert FILE --key FILE [--datagram-size N]
//	tlab-quic-go client --url https://ADDR:PORT/N            (download N bytes)
//	tlab-quic-go client --url https://ADDR:PORT/upload --upload N
//	tlab-quic-go client --url https://ADDR:PORT/N --duration D  (bulk: stop after D)
//
// The server answers GET /N with N bytes and POST with the count of the body's bytes.
// Each end writes its connections' qlog where QLOGDIR says (quic-go's own tracer). The
// client prints one JSON line: its timings in CLOCK_MONOTONIC ns and the bytes moved.
// quic-go's congestion controller is its NewReno; it offers no other.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
	"golang.org/x/sys/unix"
)

const maxBody = 1 << 40

func monotonicNs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "error: "+format+"\n", args...)
	os.Exit(1)
}

// zeros is a body of N zero bytes without allocating N; read counts what was taken.
type zeros struct{ left, read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > z.left {
		n = z.left
	}
	clear(p[:n])
	z.left -= n
	z.read += n
	return int(n), nil
}

func handler(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d\n", n)
		return
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/"), 10, 64)
	if err != nil || n < 0 || n > maxBody {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	_, _ = io.Copy(w, &zeros{left: n})
}

func quicConfig(datagramSize int) *quic.Config {
	// Flow-control windows as large as quinn's (64 MiB), so that the receive window is not
	// what limits a transfer on the lab's links.
	c := &quic.Config{
		Tracer:                         qlog.DefaultConnectionTracer,
		MaxStreamReceiveWindow:         64 << 20,
		MaxConnectionReceiveWindow:     64 << 20,
		InitialStreamReceiveWindow:     64 << 20,
		InitialConnectionReceiveWindow: 64 << 20,
		MaxIdleTimeout:                 30 * time.Second,
	}
	if datagramSize > 0 {
		// A fixed datagram size, as the flow's mss (quinn's --datagram-size).
		c.InitialPacketSize = uint16(datagramSize)
		c.DisablePathMTUDiscovery = true
	}
	return c
}

func server(args []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	bind := fs.String("bind", "", "ADDR:PORT")
	cert := fs.String("cert", "", "certificate (PEM)")
	key := fs.String("key", "", "private key (PEM)")
	datagramSize := fs.Int("datagram-size", 0, "UDP payload size (0: quic-go's own, with path MTU discovery)")
	_ = fs.Parse(args)
	if *bind == "" || *cert == "" || *key == "" {
		fail("server needs --bind, --cert and --key")
	}
	srv := &http3.Server{Addr: *bind, Handler: http.HandlerFunc(handler), QUICConfig: quicConfig(*datagramSize)}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServeTLS(*cert, *key) }()
	select {
	case err := <-done:
		fail("%v", err)
	case <-stop:
		_ = srv.Close()
		time.Sleep(200 * time.Millisecond) // the qlog writers drain
	}
}

type result struct {
	ConnectStartNs int64  `json:"connect_start_ns"`
	FirstByteNs    int64  `json:"first_byte_ns,omitempty"`
	EndNs          int64  `json:"end_ns"`
	Bytes          int64  `json:"bytes"`
	Status         int    `json:"status"`
	EndedBy        string `json:"ended_by"`
	Error          string `json:"error,omitempty"`
}

func client(args []string) {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	url := fs.String("url", "", "https://ADDR:PORT/N or /upload")
	upload := fs.Int64("upload", -1, "POST this many bytes")
	duration := fs.Duration("duration", 0, "bulk: stop after this long")
	datagramSize := fs.Int("datagram-size", 0, "UDP payload size (0: quic-go's own, with path MTU discovery)")
	_ = fs.Parse(args)
	if *url == "" {
		fail("client needs --url")
	}
	tr := &http3.Transport{
		// The lab's servers use a self-signed certificate made for the run: the handshake's
		// cryptography is real, its authentication is outside the measurement.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		QUICConfig:      quicConfig(*datagramSize),
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	res := result{ConnectStartNs: monotonicNs(), EndedBy: "bytes"}
	go func() {
		select {
		case <-stop:
			res.EndedBy = "signal"
		case <-time.After(durationOr(*duration)):
			res.EndedBy = "duration"
		}
		cancel()
	}()
	var req *http.Request
	var err error
	body := &zeros{left: *upload}
	if *upload >= 0 {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, *url, body)
		if err == nil {
			req.ContentLength = *upload
		}
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	}
	if err != nil {
		fail("%v", err)
	}
	rsp, err := tr.RoundTrip(req)
	if err == nil {
		res.Status = rsp.StatusCode
		buf := make([]byte, 64<<10)
		for {
			n, rerr := rsp.Body.Read(buf)
			if n > 0 && res.FirstByteNs == 0 {
				res.FirstByteNs = monotonicNs()
			}
			res.Bytes += int64(n)
			if rerr != nil {
				if !errors.Is(rerr, io.EOF) {
					err = rerr
				}
				break
			}
		}
	}
	if *upload >= 0 {
		// What the application handed to quic-go (a bulk upload ends with its duration,
		// before the server could answer).
		res.Bytes = body.read
	}
	res.EndNs = monotonicNs()
	if err != nil && ctx.Err() == nil {
		res.Error = err.Error()
	}
	_ = tr.Close()
	time.Sleep(200 * time.Millisecond) // the qlog writers drain
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if res.Error != "" {
		fmt.Fprintf(os.Stderr, "error: %s\n", res.Error)
		os.Exit(1)
	}
}

func durationOr(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return 1 << 62
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: tlab-quic-go server|client [flags]")
	}
	switch os.Args[1] {
	case "server":
		server(os.Args[2:])
	case "client":
		client(os.Args[2:])
	default:
		fail("unknown command %q (server or client)", os.Args[1])
	}
}
