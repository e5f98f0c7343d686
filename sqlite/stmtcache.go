package sqlite

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"

	"modernc.org/sqlite"
)

// stmtTrace, when set (by tests, see export_test.go), is called with the
// text of every statement a caching connection runs, BEGIN and COMMIT
// included: it counts the statements of a run.
var stmtTrace atomic.Pointer[func(query string)]

// traceStmt reports query to stmtTrace.
func traceStmt(query string) {
	if f := stmtTrace.Load(); f != nil {
		(*f)(query)
	}
}

// stmtCacheSize is how many prepared statements each connection keeps.
const stmtCacheSize = 256

// cachingConnector opens modernc connections that keep their prepared
// statements: SQLite parses and plans a query text once per connection
// instead of at every execution, which is most of the CPU time of the short
// queries of the run queue and the checkpoints. The package's transactions
// (connTx) begin and end with cached statements too.
type cachingConnector struct {
	inner driver.Connector
}

// newCachingConnector returns a connector for dsn whose connections cache
// their statements.
func newCachingConnector(dsn string) (driver.Connector, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return cachingConnector{inner: c}, nil
}

// Connect implements driver.Connector.
func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachedConn(conn)
}

// Driver implements driver.Connector.
func (c cachingConnector) Driver() driver.Driver { return c.inner.Driver() }

// innerConn is what cachedConn needs of a modernc connection.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachedConn is a connection with a least-recently-used cache of prepared
// statements, keyed by query text. database/sql uses a connection from one
// goroutine at a time (rows are closed under the same lock), so it needs no
// mutex. A statement whose rows are still open is busy: running the same
// text again meanwhile (a nested query) uses a one-shot statement instead.
//
// A statement does not start once its context is done, but is not
// interrupted when the context ends while it runs: modernc watches a
// cancellable context with a goroutine per statement, which costs more than
// the short statements run here (and a long one, a full-text search, ends
// on its own).
type cachedConn struct {
	innerConn
	lru   *list.List               // of *cachedStmt, most recent first
	stmts map[string]*list.Element // query -> element of lru
}

// cachedStmt is one prepared statement of a cachedConn.
type cachedStmt struct {
	query   string
	st      stmtContext
	busy    bool // rows open
	evicted bool // left the cache while busy: close when the rows close
}

// stmtContext is what a modernc statement implements.
type stmtContext interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

func newCachedConn(conn driver.Conn) (driver.Conn, error) {
	ic, ok := conn.(innerConn)
	if !ok {
		conn.Close()
		return nil, errors.New("sqlite connection lacks the context methods")
	}
	return &cachedConn{innerConn: ic, lru: list.New(), stmts: map[string]*list.Element{}}, nil
}

// uncancellable returns ctx without its cancellation, or ctx.Err() when it
// is done already (see cachedConn).
func uncancellable(ctx context.Context) (context.Context, error) {
	if ctx.Done() == nil {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// stmt returns the cached statement of query, preparing it if needed; nil
// when it is busy.
func (c *cachedConn) stmt(ctx context.Context, query string) (*cachedStmt, error) {
	if e, ok := c.stmts[query]; ok {
		cs := e.Value.(*cachedStmt)
		if cs.busy {
			return nil, nil
		}
		c.lru.MoveToFront(e)
		return cs, nil
	}
	st, err := c.innerConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	sc, ok := st.(stmtContext)
	if !ok {
		st.Close()
		return nil, errors.New("sqlite statement lacks the context methods")
	}
	cs := &cachedStmt{query: query, st: sc}
	c.stmts[query] = c.lru.PushFront(cs)
	for c.lru.Len() > stmtCacheSize {
		c.evict(c.lru.Back())
	}
	return cs, nil
}

// evict removes e from the cache and closes its statement unless busy.
func (c *cachedConn) evict(e *list.Element) {
	cs := e.Value.(*cachedStmt)
	c.lru.Remove(e)
	delete(c.stmts, cs.query)
	if cs.busy {
		cs.evicted = true
		return
	}
	cs.st.Close()
}

// ExecContext implements driver.ExecerContext.
func (c *cachedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	traceStmt(query)
	ctx, err := uncancellable(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.innerConn.ExecContext(ctx, query, args)
	}
	return cs.st.ExecContext(ctx, args)
}

// QueryContext implements driver.QueryerContext.
func (c *cachedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	traceStmt(query)
	ctx, err := uncancellable(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.innerConn.QueryContext(ctx, query, args)
	}
	rows, err := cs.st.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	dr, ok := rows.(driverRows)
	if !ok {
		rows.Close()
		return nil, errors.New("sqlite rows lack the column type methods")
	}
	cs.busy = true
	return &cachedRows{driverRows: dr, cs: cs}, nil
}

// Close implements driver.Conn: it finalizes the cached statements, then
// closes the connection.
func (c *cachedConn) Close() error {
	for c.lru.Len() > 0 {
		c.evict(c.lru.Back())
	}
	return c.innerConn.Close()
}

// driverRows is what modernc rows implement.
type driverRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// cachedRows are the rows of a cached statement; closing them (which resets
// the statement) makes the statement available again.
type cachedRows struct {
	driverRows
	cs *cachedStmt
}

// Close implements driver.Rows.
func (r *cachedRows) Close() error {
	err := r.driverRows.Close()
	if cs := r.cs; cs != nil {
		r.cs = nil
		cs.busy = false
		if cs.evicted {
			err = errors.Join(err, cs.st.Close())
		}
	}
	return err
}
