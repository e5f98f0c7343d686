package client_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// TestCrons drives every cron operation through the client.
func TestCrons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	c := e.c
	th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)

	onThread, err := c.Crons.Create(ctx, th.ThreadID, graphserver.CronCreate{
		RunCreate: graphserver.RunCreate{AssistantID: "chat", Input: json.RawMessage(`{"messages": []}`), Metadata: graphserver.Metadata{"job": "a"}},
		Schedule:  "*/5 * * * *", Timezone: "Europe/Paris",
	})
	require.NoError(t, err)
	require.Equal(t, th.ThreadID, onThread.ThreadID)
	require.Equal(t, graphserver.SystemAssistantID("chat"), onThread.AssistantID)
	require.Equal(t, "Europe/Paris", onThread.Timezone)
	require.NotNil(t, onThread.NextRunDate)
	require.True(t, onThread.Enabled)

	end := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	stateless, err := c.Crons.Create(ctx, "", graphserver.CronCreate{
		RunCreate:      graphserver.RunCreate{AssistantID: "echo", Metadata: graphserver.Metadata{"job": "b"}},
		Schedule:       "@hourly",
		EndTime:        &end,
		OnRunCompleted: graphserver.OnCompletionKeep,
	})
	require.NoError(t, err)
	require.Empty(t, stateless.ThreadID)
	require.Equal(t, graphserver.OnCompletionKeep, stateless.OnRunCompleted)
	require.True(t, end.Equal(*stateless.EndTime))

	_, err = c.Crons.Create(ctx, "", graphserver.CronCreate{RunCreate: graphserver.RunCreate{AssistantID: "chat"}, Schedule: "not a schedule"})
	requireCode(t, err, graphserver.EINVALID)
	_, err = c.Crons.Create(ctx, uuid.NewString(), graphserver.CronCreate{RunCreate: graphserver.RunCreate{AssistantID: "chat"}, Schedule: "@daily"})
	requireCode(t, err, graphserver.ENOTFOUND)

	page, err := c.Crons.Search(ctx, graphserver.CronSearch{Limit: 1})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.NotNil(t, page.Next)
	require.Equal(t, stateless.CronID, page.Items[0].CronID, "newest first")
	page, err = c.Crons.Search(ctx, graphserver.CronSearch{ThreadID: th.ThreadID, Select: []string{"cron_id", "schedule"}})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "*/5 * * * *", page.Items[0].Schedule)
	require.Empty(t, page.Items[0].AssistantID, "select projects the fields")
	n, err := c.Crons.Count(ctx, graphserver.CronSearch{Metadata: graphserver.Metadata{"job": "b"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	up, err := c.Crons.Update(ctx, onThread.CronID, graphserver.CronPatch{Schedule: ptr("0 9 * * *"), Enabled: ptr(false), Metadata: graphserver.Metadata{"v": 2.0}})
	require.NoError(t, err)
	require.Equal(t, "0 9 * * *", up.Schedule)
	require.False(t, up.Enabled)
	require.Equal(t, 2.0, up.Metadata["v"])
	disabled, err := c.Crons.Count(ctx, graphserver.CronSearch{Enabled: ptr(false)})
	require.NoError(t, err)
	require.Equal(t, 1, disabled)

	// end_time: an explicit null clears it, an absent one keeps it
	up, err = c.Crons.Update(ctx, stateless.CronID, graphserver.CronPatch{Schedule: ptr("@daily")})
	require.NoError(t, err)
	require.NotNil(t, up.EndTime)
	up, err = c.Crons.Update(ctx, stateless.CronID, graphserver.CronPatch{ClearEndTime: true})
	require.NoError(t, err)
	require.Nil(t, up.EndTime)
	require.Equal(t, "@daily", up.Schedule)

	require.NoError(t, c.Crons.Delete(ctx, onThread.CronID))
	requireCode(t, c.Crons.Delete(ctx, onThread.CronID), graphserver.ENOTFOUND)
	_, err = c.Crons.Update(ctx, onThread.CronID, graphserver.CronPatch{Enabled: ptr(true)})
	requireCode(t, err, graphserver.ENOTFOUND)
}
