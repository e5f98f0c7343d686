// Command quickstart serves the LangGraph Platform API on one SQLite file,
// with one small example graph registered: "chat", which answers each
// message and streams its reply.
//
//	go run ./examples/quickstart                      # http://127.0.0.1:8123, graphserver.db
//	go run ./examples/quickstart -addr 127.0.0.1:0    # any free port
//
// It prints "listening on http://HOST:PORT" once the port is bound and shuts
// down cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// shutdownTimeout bounds how long shutdown waits for requests and runs.
const shutdownTimeout = 10 * time.Second

// run parses args, serves until ctx ends, then shuts down: HTTP first, then
// the graphserver, then the database. It returns the first error, including
// a port already in use.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8123", "address to listen on (127.0.0.1:0 picks a free port)")
	dbPath := fs.String("db", "graphserver.db", "SQLite database file")
	if err := fs.Parse(args); err != nil {
		return err
	}

	db, err := sqlite.Open(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()

	chat, err := chatGraph()
	if err != nil {
		return err
	}
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"chat": chat},
		// Runs may ask for a webhook: POSTed over net/http, to public
		// addresses only (private ones are refused, see WebhookPolicy).
		Webhooks: graphserver.WebhookOptions{Sender: httpapi.NewWebhookSender(httpapi.WebhookSenderOptions{})},
	})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		_ = srv.Close(closeCtx)
	}()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           httpapi.New(srv, httpapi.Options{}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())

	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
