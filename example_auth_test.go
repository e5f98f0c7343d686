package graphserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/sqlite"
)

// Multi-tenant access control: every thread is stamped with its creator as
// owner, and every other thread event is narrowed to the caller's own. The
// Server enforces it in-process as over HTTP (httpapi calls the
// Authenticator once per request; here the caller puts the user in ctx).
func ExampleAuth() {
	dir, err := os.MkdirTemp("", "graphserver-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "gs.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()

	// Over HTTP the Authenticator turns each request into a User; a key
	// table stands in for a real credential check.
	keys := map[string]string{"key-ann": "ann", "key-bob": "bob"}
	authenticate := graphserver.AuthenticatorFunc(func(ctx context.Context, r *graphserver.AuthRequest) (*graphserver.User, error) {
		id, ok := keys[r.Header("X-Api-Key")]
		if !ok {
			return nil, graphserver.AuthError(401, "Invalid API key", nil)
		}
		return &graphserver.User{Identity: id, IsAuthenticated: true}, nil
	})
	owner := func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
		ev.SetMetadata("owner", ev.User.Identity) // on create and update
		return graphserver.Filter{"owner": ev.User.Identity}, nil
	}
	auth := graphserver.NewAuth(authenticate).
		On("threads", "*", owner).
		On("threads", "delete", func(ctx context.Context, ev *graphserver.AuthEvent) (graphserver.Filter, error) {
			return nil, graphserver.Forbidden("Threads are kept.")
		})

	srv, err := graphserver.New(graphserver.Options{Storage: db, Auth: auth})
	if err != nil {
		panic(err)
	}
	ann := graphserver.NewContextWithUser(context.Background(), &graphserver.User{Identity: "ann", IsAuthenticated: true})
	bob := graphserver.NewContextWithUser(context.Background(), &graphserver.User{Identity: "bob", IsAuthenticated: true})

	th, err := srv.CreateThread(ann, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"topic": "tea"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("owner:", th.Metadata["owner"])
	_, err = srv.GetThread(bob, th.ThreadID)
	fmt.Println("bob reads it:", graphserver.ErrorCode(err))
	n, _ := srv.CountThreads(bob, graphserver.ThreadSearch{})
	fmt.Println("bob counts:", n)
	n, _ = srv.CountThreads(ann, graphserver.ThreadSearch{})
	fmt.Println("ann counts:", n)
	err = srv.DeleteThread(ann, th.ThreadID)
	fmt.Println("ann deletes it:", graphserver.ErrorMessage(err))
	_, err = srv.GetThread(context.Background(), th.ThreadID)
	fmt.Println("no user:", graphserver.ErrorCode(err))
	// Output:
	// owner: ann
	// bob reads it: not_found
	// bob counts: 0
	// ann counts: 1
	// ann deletes it: Threads are kept.
	// no user: unauthorized
}
