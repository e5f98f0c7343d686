package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scenario is one row of the table: setup prepares a target, req makes one
// timed request (returning its latency, which is the time to the first
// event for a stream).
type scenario struct {
	key, name string
	setup     func(ctx context.Context, t *target, clients int) error
	req       func(ctx context.Context, t *target, client int) (time.Duration, error)
}

// runBody is the input of the one-node runs.
const runBody = `{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"hi"}]}}`

// getItems is how many items GET /store/items picks from.
const getItems = 1000

var scenarios = []scenario{
	{key: "threads", name: "POST /threads", req: timed(func(ctx context.Context, t *target, _ int) error {
		return expect(t.call(ctx, http.MethodPost, "/threads", `{}`, http.StatusOK))(`"thread_id"`)
	})},
	{key: "store-put", name: "PUT /store/items", req: timed(func(ctx context.Context, t *target, _ int) error {
		i := t.seq.Add(1)
		body := fmt.Sprintf(`{"namespace":["loadtest","put"],"key":"k%d","value":{"text":"the quick brown fox","n":%d}}`, i, i)
		_, err := t.call(ctx, http.MethodPut, "/store/items", body, http.StatusNoContent)
		return err
	})},
	{key: "store-get", name: "GET /store/items", setup: seedItems, req: timed(func(ctx context.Context, t *target, _ int) error {
		key := "k" + strconv.FormatInt(t.seq.Add(1)%getItems, 10)
		return expect(t.call(ctx, http.MethodGet, "/store/items?namespace=loadtest.get&key="+key, "", http.StatusOK))(`"` + key + `"`)
	})},
	{key: "wait-stateless", name: "POST /runs/wait (stateless, one node)", req: timed(func(ctx context.Context, t *target, _ int) error {
		return expect(t.call(ctx, http.MethodPost, "/runs/wait", runBody, http.StatusOK))(`"hi"`)
	})},
	{key: "wait-thread", name: "POST /threads/{id}/runs/wait (one node)", setup: clientThreads, req: timed(func(ctx context.Context, t *target, client int) error {
		return expect(t.call(ctx, http.MethodPost, "/threads/"+t.threads[client]+"/runs/wait", runBody, http.StatusOK))(`"hi"`)
	})},
	{key: "stream-first", name: "POST /runs/stream, time to first event", req: firstEvent},
}

// timed times fn.
func timed(fn func(ctx context.Context, t *target, client int) error) func(context.Context, *target, int) (time.Duration, error) {
	return func(ctx context.Context, t *target, client int) (time.Duration, error) {
		start := time.Now()
		err := fn(ctx, t, client)
		return time.Since(start), err
	}
}

// expect checks that a body contains want.
func expect(b []byte, err error) func(want string) error {
	return func(want string) error {
		if err == nil && !bytes.Contains(b, []byte(want)) {
			err = fmt.Errorf("response %.200s lacks %s", b, want)
		}
		return err
	}
}

// seedItems puts the items GET /store/items reads.
func seedItems(ctx context.Context, t *target, _ int) error {
	for i := range getItems {
		body := fmt.Sprintf(`{"namespace":["loadtest","get"],"key":"k%d","value":{"text":"the quick brown fox","n":%d}}`, i, i)
		if _, err := t.call(ctx, http.MethodPut, "/store/items", body, http.StatusNoContent); err != nil {
			return err
		}
	}
	return nil
}

// clientThreads creates one thread per client.
func clientThreads(ctx context.Context, t *target, clients int) error {
	t.threads = t.threads[:0]
	for range clients {
		id, err := createThread(ctx, t)
		if err != nil {
			return err
		}
		t.threads = append(t.threads, id)
	}
	return nil
}

func createThread(ctx context.Context, t *target) (string, error) {
	b, err := t.call(ctx, http.MethodPost, "/threads", `{}`, http.StatusOK)
	if err != nil {
		return "", err
	}
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal(b, &th); err != nil || th.ThreadID == "" {
		return "", fmt.Errorf("POST /threads: %.200s", b)
	}
	return th.ThreadID, nil
}

// firstEvent starts a stateless streamed run and times its first event
// (metadata); the rest of the stream is read untimed.
func firstEvent(ctx context.Context, t *target, _ int) (time.Duration, error) {
	start := time.Now()
	resp, err := t.post(ctx, "/runs/stream", runBody)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "event: metadata") {
		return 0, fmt.Errorf("POST /runs/stream: %d, first line %q: %v", resp.StatusCode, line, err)
	}
	d := time.Since(start)
	_, err = io.Copy(io.Discard, r)
	return d, err
}
