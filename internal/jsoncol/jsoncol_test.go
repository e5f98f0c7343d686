package jsoncol_test

import (
	"errors"
	"math"
	"testing"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/jsoncol"
	"github.com/stretchr/testify/require"
)

func TestObjectRoundTrip(t *testing.T) {
	s, err := jsoncol.Object(nil)
	require.NoError(t, err)
	require.Equal(t, "{}", s)

	s, err = jsoncol.Object(map[string]any{"a": 1, "b": []any{"x"}})
	require.NoError(t, err)
	o, err := jsoncol.DecodeObject(s)
	require.NoError(t, err)
	require.Equal(t, graphserver.Object{"a": float64(1), "b": []any{"x"}}, o)

	for _, empty := range []string{"", "null", "{}"} {
		o, err := jsoncol.DecodeObject(empty)
		require.NoError(t, err)
		require.NotNil(t, o, "%q decodes to an empty, non-nil object", empty)
		require.Empty(t, o)
	}
	_, err = jsoncol.DecodeObject("[1]")
	require.Error(t, err)
}

func TestUnencodableIsEINVALID(t *testing.T) {
	_, err := jsoncol.Object(map[string]any{"x": math.Inf(1)})
	var e *graphserver.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, graphserver.EINVALID, e.Code)

	_, err = jsoncol.Value(make(chan int))
	require.True(t, errors.As(err, &e))
	require.Equal(t, graphserver.EINVALID, e.Code)
}

func TestInterruptsNeverNil(t *testing.T) {
	require.NotNil(t, jsoncol.Interrupts(nil))
	m := map[string][]graphserver.Interrupt{"t": {{ID: "i"}}}
	require.Equal(t, m, jsoncol.Interrupts(m))
}

func TestThreadColumns(t *testing.T) {
	c, err := jsoncol.Thread(&graphserver.Thread{Metadata: graphserver.Metadata{"a": "b"}, Values: []byte(`{"x":1}`)})
	require.NoError(t, err)
	require.Equal(t, `{"a":"b"}`, c.Metadata)
	require.Equal(t, "{}", c.Config)
	require.Equal(t, "{}", c.Interrupts)
	require.Equal(t, `{"x":1}`, *c.Values)
	require.Nil(t, c.Error, "absent: NULL")

	_, err = jsoncol.Thread(&graphserver.Thread{Error: []byte(`{bad`)})
	var e *graphserver.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, graphserver.EINVALID, e.Code)
}

func TestEncoded(t *testing.T) {
	require.Nil(t, jsoncol.Encoded(nil), "absent: NULL")
	b := []byte(`{"x":1}`)
	s := jsoncol.Encoded(b)
	b[0] = '['
	require.Equal(t, `{"x":1}`, *s, "a copy")
}
