package errmap_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/errmap"
)

// TestRoundTrip: every code but EBUSY comes back from its own status.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, code := range []string{graphserver.EINVALID, graphserver.EBADREQUEST, graphserver.ENOTFOUND,
		graphserver.ECONFLICT, graphserver.EUNAUTHORIZED, graphserver.EFORBIDDEN, graphserver.EUNAVAILABLE,
		graphserver.EINTERNAL, graphserver.ETOOLARGE} {
		require.Equal(t, code, errmap.Code(errmap.Status(code)), code)
	}
	require.Equal(t, http.StatusConflict, errmap.Status(graphserver.EBUSY))
	require.Equal(t, graphserver.ECONFLICT, errmap.Code(http.StatusConflict))
	require.Equal(t, http.StatusInternalServerError, errmap.Status("no such code"))
}

func TestCodeOutsideTheTable(t *testing.T) {
	t.Parallel()
	for status, code := range map[int]string{
		http.StatusTooManyRequests:         graphserver.EUNAVAILABLE,
		http.StatusBadGateway:              graphserver.EUNAVAILABLE,
		http.StatusGatewayTimeout:          graphserver.EUNAVAILABLE,
		http.StatusMethodNotAllowed:        graphserver.EBADREQUEST,
		http.StatusPaymentRequired:         graphserver.EBADREQUEST,
		http.StatusNotImplemented:          graphserver.EINTERNAL,
		http.StatusHTTPVersionNotSupported: graphserver.EINTERNAL,
	} {
		require.Equal(t, code, errmap.Code(status), status)
	}
}
