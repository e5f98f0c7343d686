package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/graphserver/graphserver"
)

// Crons groups the cron operations (/runs/crons, /threads/{id}/runs/crons).
// Crons are a Platform feature: the JS dev server answers them with 500
// "Not implemented".
type Crons struct{ c *Client }

// Create creates a cron that creates a run on threadID on its schedule
// (POST /threads/{id}/runs/crons), or a new thread per run when threadID
// is "" (POST /runs/crons). It is never retried.
func (cr *Crons) Create(ctx context.Context, threadID string, body graphserver.CronCreate) (*graphserver.Cron, error) {
	path := "/runs/crons"
	if threadID != "" {
		path = "/threads/" + esc(threadID) + "/runs/crons"
	}
	var out graphserver.Cron
	return &out, cr.c.json(ctx, call{method: http.MethodPost, path: path, body: body, header: body.Headers}, &out)
}

// Update patches a cron (PATCH /runs/crons/{id}); patch.ClearEndTime sends
// an explicit "end_time": null, which removes the end time.
func (cr *Crons) Update(ctx context.Context, id string, patch graphserver.CronPatch) (*graphserver.Cron, error) {
	var body any = patch
	if patch.ClearEndTime {
		b, err := json.Marshal(patch)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		m["end_time"] = json.RawMessage("null")
		body = m
	}
	var out graphserver.Cron
	return &out, cr.c.json(ctx, call{method: http.MethodPatch, path: "/runs/crons/" + esc(id), body: body}, &out)
}

// Delete deletes a cron; the runs it created stay (DELETE
// /runs/crons/{id}).
func (cr *Crons) Delete(ctx context.Context, id string) error {
	return cr.c.json(ctx, call{method: http.MethodDelete, path: "/runs/crons/" + esc(id), idempotent: true}, nil)
}

// Search returns one page of crons (POST /runs/crons/search); see
// Assistants.Search for the page's Next and Total.
func (cr *Crons) Search(ctx context.Context, q graphserver.CronSearch) (*graphserver.Page[*graphserver.Cron], error) {
	return search[*graphserver.Cron](ctx, cr.c, "/runs/crons/search", q, q.Select)
}

// Count counts crons (POST /runs/crons/count).
func (cr *Crons) Count(ctx context.Context, q graphserver.CronSearch) (int, error) {
	var n int
	return n, cr.c.json(ctx, call{method: http.MethodPost, path: "/runs/crons/count", body: q, idempotent: true}, &n)
}
