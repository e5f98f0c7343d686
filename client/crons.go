package client

// Crons groups the cron operations (/runs/crons, /threads/{id}/runs/crons).
type Crons struct{ c *Client }
