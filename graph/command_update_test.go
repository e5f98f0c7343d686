package graph_test

import (
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/stretchr/testify/require"
)

// A Command update on a finished thread schedules no node but still writes
// a new checkpoint holding the update (LangGraph's next tick).
func TestCommandUpdateOnFinishedThread(t *testing.T) {
	t.Parallel()
	h := newHarness(t, agentGraph(t))
	h.input(`{"messages": ["foo"]}`)
	before := h.history()
	rec, err := h.run(graphserver.GraphRun{Command: &graphserver.RunCommand{Update: []byte(`{"interrupt": true}`)}, StreamModes: []string{"values"}})
	require.NoError(t, err)
	require.Len(t, rec.of("values"), 1)

	st := h.state()
	require.Equal(t, true, st.Values.(map[string]any)["interrupt"])
	require.Empty(t, st.Next)
	require.Equal(t, "loop", st.Metadata["source"])
	require.Equal(t, toFloat(before[0].Metadata["step"])+1, toFloat(st.Metadata["step"]))
	require.Equal(t, *before[0].Checkpoint.CheckpointID, *st.ParentCheckpoint.CheckpointID)
	require.Len(t, h.history(), len(before)+1)
}
