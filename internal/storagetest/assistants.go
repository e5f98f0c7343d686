package storagetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// exerciseAssistants checks driver.AssistantStorage.
func exerciseAssistants(t *testing.T, open func(t *testing.T) driver.Storage) {
	t.Helper()

	type bundle struct {
		st  driver.Storage
		ctx context.Context
	}
	setup := func(t *testing.T) *bundle {
		t.Helper()
		return &bundle{st: open(t), ctx: t.Context()}
	}
	owner := graphserver.Filter{"owner": "ann"}
	other := graphserver.Filter{"owner": "bob"}

	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		got := createAssistant(t, b.st, assistantOpts{
			ID: "a1", GraphID: "chat", Name: "Helper", Description: ptr("desc"),
			Config:   graphserver.Object{"tags": []any{"x"}, "configurable": map[string]any{"model": "m"}},
			Context:  graphserver.Object{"k": "v"},
			Metadata: graphserver.Metadata{"owner": "ann", "n": 1.0},
		})
		want := &graphserver.Assistant{
			AssistantID: "a1", GraphID: "chat", Name: "Helper", Description: ptr("desc"), Version: 1,
			Config:    graphserver.Object{"tags": []any{"x"}, "configurable": map[string]any{"model": "m"}},
			Context:   graphserver.Object{"k": "v"},
			Metadata:  graphserver.Metadata{"owner": "ann", "n": 1.0},
			CreatedAt: t0, UpdatedAt: t0,
		}
		require.Equal(t, want, got)

		read, err := b.st.GetAssistant(b.ctx, "a1", nil)
		require.NoError(t, err)
		require.Equal(t, want, read)
		read, err = b.st.GetAssistant(b.ctx, "a1", owner)
		require.NoError(t, err)
		require.Equal(t, want, read)

		versions, err := b.st.ListAssistantVersions(b.ctx, "a1", nil)
		require.NoError(t, err)
		require.Equal(t, []*graphserver.AssistantVersion{{
			AssistantID: "a1", Version: 1, GraphID: "chat", Config: want.Config, Context: want.Context,
			Metadata: want.Metadata, Name: "Helper", Description: ptr("desc"), CreatedAt: t0,
		}}, versions)
	})

	t.Run("CreateEmptyObjects", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		got := createAssistant(t, b.st, assistantOpts{ID: "a1"})
		require.Equal(t, graphserver.Object{}, got.Config)
		require.Equal(t, graphserver.Object{}, got.Context)
		require.Equal(t, graphserver.Metadata{}, got.Metadata)
		require.Nil(t, got.Description)
	})

	t.Run("CreateConflict", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createAssistant(t, b.st, assistantOpts{ID: "a1", Name: "first", Metadata: graphserver.Metadata{"owner": "ann"}})
		dup := &graphserver.Assistant{AssistantID: "a1", GraphID: "g2", Name: "second", CreatedAt: at(5), UpdatedAt: at(5)}

		_, err := b.st.CreateAssistant(b.ctx, dup, graphserver.IfExistsRaise, nil)
		requireCode(t, err, graphserver.ECONFLICT)
		_, err = b.st.CreateAssistant(b.ctx, dup, "", nil)
		requireCode(t, err, graphserver.ECONFLICT)

		got, err := b.st.CreateAssistant(b.ctx, dup, graphserver.IfExistsDoNothing, owner)
		require.NoError(t, err)
		require.Equal(t, "first", got.Name)
		require.Equal(t, "g", got.GraphID)
		require.Equal(t, t0, got.CreatedAt)

		// Hidden by the filter: still a conflict, never the hidden row.
		_, err = b.st.CreateAssistant(b.ctx, dup, graphserver.IfExistsDoNothing, other)
		requireCode(t, err, graphserver.ECONFLICT)
		_, err = b.st.CreateAssistant(b.ctx, dup, graphserver.IfExistsRaise, other)
		requireCode(t, err, graphserver.ECONFLICT)

		n, err := b.st.CountAssistants(b.ctx, &graphserver.AssistantSearch{})
		require.NoError(t, err)
		require.Equal(t, 1, n)
		versions, err := b.st.ListAssistantVersions(b.ctx, "a1", nil)
		require.NoError(t, err)
		require.Len(t, versions, 1)
	})

	t.Run("GetNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createAssistant(t, b.st, assistantOpts{ID: "a1", Metadata: graphserver.Metadata{"owner": "ann"}})
		_, err := b.st.GetAssistant(b.ctx, "missing", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetAssistant(b.ctx, "a1", other)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetAssistant(b.ctx, "a1", graphserver.Filter{"missing_key": "x"})
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("Update", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createAssistant(t, b.st, assistantOpts{
			ID: "a1", Name: "v1", Config: graphserver.Object{"a": 1.0}, Context: graphserver.Object{"c": 1.0},
			Metadata: graphserver.Metadata{"owner": "ann", "keep": "yes", "over": "old"},
		})
		got, err := b.st.UpdateAssistant(b.ctx, "a1", &graphserver.AssistantPatch{
			Config:   graphserver.Object{"b": 2.0},
			Metadata: graphserver.Metadata{"over": "new", "added": true},
			Name:     ptr("v2"),
		}, at(10), owner)
		require.NoError(t, err)
		require.Equal(t, 2, got.Version)
		require.Equal(t, "v2", got.Name)
		require.Equal(t, "g", got.GraphID)
		require.Equal(t, graphserver.Object{"b": 2.0}, got.Config, "config is replaced")
		require.Equal(t, graphserver.Object{"c": 1.0}, got.Context, "context is kept when not given")
		require.Equal(t, graphserver.Metadata{"owner": "ann", "keep": "yes", "over": "new", "added": true}, got.Metadata)
		require.Equal(t, t0, got.CreatedAt)
		require.Equal(t, at(10), got.UpdatedAt)

		read, err := b.st.GetAssistant(b.ctx, "a1", nil)
		require.NoError(t, err)
		require.Equal(t, got, read)

		got, err = b.st.UpdateAssistant(b.ctx, "a1", &graphserver.AssistantPatch{
			GraphID: ptr("g2"), Context: graphserver.Object{}, Description: ptr("d"),
		}, at(20), nil)
		require.NoError(t, err)
		require.Equal(t, 3, got.Version)
		require.Equal(t, "g2", got.GraphID)
		require.Equal(t, graphserver.Object{}, got.Context)
		require.Equal(t, ptr("d"), got.Description)

		versions, err := b.st.ListAssistantVersions(b.ctx, "a1", nil)
		require.NoError(t, err)
		require.Len(t, versions, 3)
		require.Equal(t, []int{3, 2, 1}, []int{versions[0].Version, versions[1].Version, versions[2].Version})
		require.Equal(t, "v1", versions[2].Name)
		require.Equal(t, graphserver.Object{"a": 1.0}, versions[2].Config)
		require.Equal(t, graphserver.Metadata{"owner": "ann", "keep": "yes", "over": "old"}, versions[2].Metadata)
		require.Equal(t, "v2", versions[1].Name)
		require.Equal(t, at(10), versions[1].CreatedAt)
		require.Equal(t, "g2", versions[0].GraphID)
		require.Equal(t, at(20), versions[0].CreatedAt)

		_, err = b.st.UpdateAssistant(b.ctx, "a1", &graphserver.AssistantPatch{Name: ptr("x")}, at(30), other)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.UpdateAssistant(b.ctx, "missing", &graphserver.AssistantPatch{Name: ptr("x")}, at(30), nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		read, err = b.st.GetAssistant(b.ctx, "a1", nil)
		require.NoError(t, err)
		require.Equal(t, 3, read.Version, "a hidden update changes nothing")
	})

	t.Run("GetSeesEveryChange", func(t *testing.T) {
		// Reads repeated between changes (a driver may serve them from
		// memory) see each change, and give the caller its own copy.
		t.Parallel()
		b := setup(t)
		get := func() *graphserver.Assistant {
			t.Helper()
			a, err := b.st.GetAssistant(b.ctx, "a1", nil)
			require.NoError(t, err)
			return a
		}
		createAssistant(t, b.st, assistantOpts{ID: "a1", Name: "v1", Config: graphserver.Object{"configurable": map[string]any{"m": "x"}}})
		first := get()
		first.Config["configurable"].(map[string]any)["m"] = "changed by the caller"
		first.Name = "changed"
		again := get()
		require.Equal(t, "v1", again.Name)
		require.Equal(t, graphserver.Object{"configurable": map[string]any{"m": "x"}}, again.Config)

		_, err := b.st.UpdateAssistant(b.ctx, "a1", &graphserver.AssistantPatch{Name: ptr("v2")}, at(10), nil)
		require.NoError(t, err)
		require.Equal(t, "v2", get().Name)
		_, err = b.st.SetAssistantVersion(b.ctx, "a1", 1, at(20), nil)
		require.NoError(t, err)
		require.Equal(t, "v1", get().Name)
		createAssistant(t, b.st, assistantOpts{ID: "a2", Name: "other"})
		require.Equal(t, "v1", get().Name)
		require.NoError(t, b.st.DeleteAssistant(b.ctx, "a1", false, nil))
		_, err = b.st.GetAssistant(b.ctx, "a1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("SetVersion", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createAssistant(t, b.st, assistantOpts{
			ID: "a1", Name: "v1", Description: ptr("first"), Config: graphserver.Object{"a": 1.0},
			Context: graphserver.Object{"c": 1.0}, Metadata: graphserver.Metadata{"owner": "ann", "v": 1.0},
		})
		_, err := b.st.UpdateAssistant(b.ctx, "a1", &graphserver.AssistantPatch{
			GraphID: ptr("g2"), Name: ptr("v2"), Description: ptr("second"), Config: graphserver.Object{"b": 2.0},
			Context: graphserver.Object{"c": 2.0}, Metadata: graphserver.Metadata{"v": 2.0},
		}, at(10), nil)
		require.NoError(t, err)

		got, err := b.st.SetAssistantVersion(b.ctx, "a1", 1, at(20), owner)
		require.NoError(t, err)
		require.Equal(t, &graphserver.Assistant{
			AssistantID: "a1", GraphID: "g", Name: "v1", Description: ptr("first"), Version: 1,
			Config: graphserver.Object{"a": 1.0}, Context: graphserver.Object{"c": 1.0},
			Metadata: graphserver.Metadata{"owner": "ann", "v": 1.0}, CreatedAt: t0, UpdatedAt: at(20),
		}, got)
		read, err := b.st.GetAssistant(b.ctx, "a1", nil)
		require.NoError(t, err)
		require.Equal(t, got, read)

		// The next version is max+1, not current+1.
		got, err = b.st.UpdateAssistant(b.ctx, "a1", &graphserver.AssistantPatch{Name: ptr("v3")}, at(30), nil)
		require.NoError(t, err)
		require.Equal(t, 3, got.Version)
		require.Equal(t, graphserver.Object{"a": 1.0}, got.Config, "the update builds on the version set current")

		_, err = b.st.SetAssistantVersion(b.ctx, "a1", 99, at(40), nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.SetAssistantVersion(b.ctx, "missing", 1, at(40), nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.SetAssistantVersion(b.ctx, "a1", 2, at(40), other)
		requireCode(t, err, graphserver.ENOTFOUND)
		read, err = b.st.GetAssistant(b.ctx, "a1", nil)
		require.NoError(t, err)
		require.Equal(t, 3, read.Version)
		require.Equal(t, at(30), read.UpdatedAt)
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createAssistant(t, b.st, assistantOpts{ID: "a1", Metadata: graphserver.Metadata{"owner": "ann"}})
		createAssistant(t, b.st, assistantOpts{ID: "a2"})
		_, err := b.st.UpdateAssistant(b.ctx, "a1", &graphserver.AssistantPatch{Name: ptr("x")}, at(1), nil)
		require.NoError(t, err)
		createThread(t, b.st, threadOpts{ID: "t1", Metadata: graphserver.Metadata{"assistant_id": "a1"}})

		requireCode(t, b.st.DeleteAssistant(b.ctx, "a1", false, other), graphserver.ENOTFOUND)
		_, err = b.st.GetAssistant(b.ctx, "a1", nil)
		require.NoError(t, err, "a hidden delete deletes nothing")

		require.NoError(t, b.st.DeleteAssistant(b.ctx, "a1", false, owner))
		_, err = b.st.GetAssistant(b.ctx, "a1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.ListAssistantVersions(b.ctx, "a1", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		requireCode(t, b.st.DeleteAssistant(b.ctx, "a1", false, nil), graphserver.ENOTFOUND)
		_, err = b.st.GetThread(b.ctx, "t1", nil)
		require.NoError(t, err, "threads stay without deleteThreads")
		_, err = b.st.GetAssistant(b.ctx, "a2", nil)
		require.NoError(t, err)

		// Recreating the id starts a fresh version history.
		createAssistant(t, b.st, assistantOpts{ID: "a1"})
		versions, err := b.st.ListAssistantVersions(b.ctx, "a1", nil)
		require.NoError(t, err)
		require.Len(t, versions, 1)
	})

	t.Run("DeleteWithThreads", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createAssistant(t, b.st, assistantOpts{ID: "a1", Metadata: graphserver.Metadata{"owner": "ann"}})
		createThread(t, b.st, threadOpts{ID: "mine", Metadata: graphserver.Metadata{"assistant_id": "a1", "owner": "ann"}})
		createThread(t, b.st, threadOpts{ID: "hidden", Metadata: graphserver.Metadata{"assistant_id": "a1", "owner": "bob"}})
		createThread(t, b.st, threadOpts{ID: "unrelated", Metadata: graphserver.Metadata{"assistant_id": "a2", "owner": "ann"}})
		putCheckpoint(t, b.st, "mine", checkpointOpts{ID: "c1", Versions: map[string]string{"x": "1"}, Blobs: []driver.ChannelBlob{blob("x", "1", "", `1`)}})

		require.NoError(t, b.st.DeleteAssistant(b.ctx, "a1", true, owner))
		_, err := b.st.GetThread(b.ctx, "mine", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetCheckpoint(b.ctx, "mine", "", "")
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.GetThread(b.ctx, "hidden", nil)
		require.NoError(t, err, "the filter protects threads the caller may not see")
		_, err = b.st.GetThread(b.ctx, "unrelated", nil)
		require.NoError(t, err)
	})

	t.Run("Search", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createAssistant(t, b.st, assistantOpts{ID: "a1", GraphID: "chat", Name: "Alpha Bot", CreatedAt: at(1),
			Metadata: graphserver.Metadata{"owner": "ann", "tags": []any{"x", "y"}, "nested": map[string]any{"k": "v", "n": 1.0}}})
		createAssistant(t, b.st, assistantOpts{ID: "a2", GraphID: "chat", Name: "beta", CreatedAt: at(2),
			Metadata: graphserver.Metadata{"owner": "bob", "tags": []any{"y"}}})
		createAssistant(t, b.st, assistantOpts{ID: "a3", GraphID: "other", Name: "GAMMA bot", CreatedAt: at(3),
			Metadata: graphserver.Metadata{"owner": "ann"}})
		_, err := b.st.UpdateAssistant(b.ctx, "a1", &graphserver.AssistantPatch{}, at(10), nil)
		require.NoError(t, err)

		search := func(s graphserver.AssistantSearch) []string {
			t.Helper()
			got, err := b.st.SearchAssistants(b.ctx, &s)
			require.NoError(t, err)
			return assistantIDs(got)
		}
		count := func(s graphserver.AssistantSearch) int {
			t.Helper()
			n, err := b.st.CountAssistants(b.ctx, &s)
			require.NoError(t, err)
			return n
		}

		require.Equal(t, []string{"a3", "a2", "a1"}, search(graphserver.AssistantSearch{}), "default created_at desc")
		require.Equal(t, []string{"a2", "a1"}, search(graphserver.AssistantSearch{GraphID: "chat"}))
		require.Equal(t, 2, count(graphserver.AssistantSearch{GraphID: "chat"}))
		require.Equal(t, []string{"a3", "a1"}, search(graphserver.AssistantSearch{Name: "BOT"}), "name is a case-insensitive substring")
		require.Equal(t, 2, count(graphserver.AssistantSearch{Name: "bot"}))
		require.Equal(t, []string{"a1"}, search(graphserver.AssistantSearch{Name: "ha b"}))
		require.Equal(t, []string{"a3", "a1"}, search(graphserver.AssistantSearch{Metadata: graphserver.Metadata{"owner": "ann"}}))
		require.Equal(t, []string{"a2", "a1"}, search(graphserver.AssistantSearch{Metadata: graphserver.Metadata{"tags": []any{"y"}}}))
		require.Equal(t, []string{"a1"}, search(graphserver.AssistantSearch{Metadata: graphserver.Metadata{"nested": map[string]any{"n": 1}}}))
		require.Equal(t, 1, count(graphserver.AssistantSearch{Metadata: graphserver.Metadata{"tags": []any{"x"}}}))
		require.Equal(t, []string{"a2"}, search(graphserver.AssistantSearch{Filter: other}))
		require.Equal(t, []string{"a1"}, search(graphserver.AssistantSearch{GraphID: "chat", Filter: owner}))
		require.Equal(t, 1, count(graphserver.AssistantSearch{GraphID: "chat", Filter: owner}))
		require.Equal(t, []string{"a1"}, search(graphserver.AssistantSearch{Filter: graphserver.Filter{"tags": map[string]any{"$contains": "x"}}}))
		require.Equal(t, []string{"a2", "a1"}, search(graphserver.AssistantSearch{Filter: graphserver.Filter{"tags": map[string]any{"$contains": "y"}}}))
		require.Empty(t, search(graphserver.AssistantSearch{GraphID: "none"}))
		require.Equal(t, 0, count(graphserver.AssistantSearch{Metadata: graphserver.Metadata{"owner": "zed"}}))

		sorts := []struct {
			by, order string
			want      []string
		}{
			{"assistant_id", "asc", []string{"a1", "a2", "a3"}},
			{"assistant_id", "desc", []string{"a3", "a2", "a1"}},
			{"graph_id", "asc", []string{"a1", "a2", "a3"}},
			{"graph_id", "desc", []string{"a3", "a2", "a1"}},
			{"name", "asc", []string{"a1", "a3", "a2"}}, // byte order: "Alpha", "GAMMA", "beta"
			{"created_at", "asc", []string{"a1", "a2", "a3"}},
			{"created_at", "desc", []string{"a3", "a2", "a1"}},
			{"updated_at", "desc", []string{"a1", "a3", "a2"}},
			{"updated_at", "asc", []string{"a2", "a3", "a1"}},
			{"name; DROP TABLE assistants", "asc", []string{"a1", "a2", "a3"}}, // unknown: default column
		}
		for _, s := range sorts {
			require.Equal(t, s.want, search(graphserver.AssistantSearch{SortBy: s.by, SortOrder: s.order}), "%s %s", s.by, s.order)
		}

		// Paging: limit+1 rows tell the caller more exist.
		require.Equal(t, []string{"a1", "a2"}, search(graphserver.AssistantSearch{SortBy: "assistant_id", SortOrder: "asc", Limit: 1}))
		require.Equal(t, []string{"a2", "a3"}, search(graphserver.AssistantSearch{SortBy: "assistant_id", SortOrder: "asc", Limit: 1, Offset: 1}))
		require.Equal(t, []string{"a3"}, search(graphserver.AssistantSearch{SortBy: "assistant_id", SortOrder: "asc", Limit: 1, Offset: 2}))
		require.Empty(t, search(graphserver.AssistantSearch{SortBy: "assistant_id", SortOrder: "asc", Limit: 5, Offset: 3}))
		require.Equal(t, []string{"a1", "a2", "a3"}, search(graphserver.AssistantSearch{SortBy: "assistant_id", SortOrder: "asc", Limit: 3}))
		require.Equal(t, 3, count(graphserver.AssistantSearch{Limit: 1, Offset: 2}), "count ignores paging")

		// Full rows come back.
		got, err := b.st.SearchAssistants(b.ctx, &graphserver.AssistantSearch{GraphID: "other"})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "GAMMA bot", got[0].Name)
		require.Equal(t, graphserver.Metadata{"owner": "ann"}, got[0].Metadata)
		require.Equal(t, at(3), got[0].CreatedAt)

		_, err = b.st.SearchAssistants(b.ctx, &graphserver.AssistantSearch{Filter: graphserver.Filter{"owner": map[string]any{"$regex": "a"}}})
		requireCode(t, err, graphserver.EINVALID)
	})

	t.Run("Versions", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		createAssistant(t, b.st, assistantOpts{ID: "a1", Metadata: graphserver.Metadata{"owner": "ann", "stage": "draft"}})
		for i, stage := range []string{"review", "draft", "final"} {
			_, err := b.st.UpdateAssistant(b.ctx, "a1", &graphserver.AssistantPatch{Metadata: graphserver.Metadata{"stage": stage}}, at(i+1), nil)
			require.NoError(t, err)
		}
		list := func(s *graphserver.AssistantVersionSearch) []int {
			t.Helper()
			vs, err := b.st.ListAssistantVersions(b.ctx, "a1", s)
			require.NoError(t, err)
			out := []int{}
			for _, v := range vs {
				out = append(out, v.Version)
			}
			return out
		}
		require.Equal(t, []int{4, 3, 2, 1}, list(nil))
		require.Equal(t, []int{4, 3, 2, 1}, list(&graphserver.AssistantVersionSearch{Filter: owner}))
		require.Equal(t, []int{3, 1}, list(&graphserver.AssistantVersionSearch{Metadata: graphserver.Metadata{"stage": "draft"}}))
		require.Equal(t, []int{4, 3}, list(&graphserver.AssistantVersionSearch{Limit: 2}))
		require.Equal(t, []int{2, 1}, list(&graphserver.AssistantVersionSearch{Limit: 2, Offset: 2}))
		require.Equal(t, []int{}, list(&graphserver.AssistantVersionSearch{Metadata: graphserver.Metadata{"stage": "gone"}}))
		_, err := b.st.ListAssistantVersions(b.ctx, "a1", &graphserver.AssistantVersionSearch{Filter: other})
		requireCode(t, err, graphserver.ENOTFOUND)
		_, err = b.st.ListAssistantVersions(b.ctx, "missing", nil)
		requireCode(t, err, graphserver.ENOTFOUND)
	})
}
