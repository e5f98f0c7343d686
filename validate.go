package graphserver

import (
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Paging bounds shared by every search of the API.
const (
	// SearchLimitDefault is the page size of a search that names no limit.
	SearchLimitDefault = 10
	// SearchLimitMax is the largest page size a search accepts.
	SearchLimitMax = 1000
)

// parseUUID returns id in canonical (lower-case, hyphenated) form, or
// EINVALID "Invalid <what> ID: must be a UUID".
func parseUUID(what, id string) (string, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return "", Errorf(EINVALID, "Invalid %s ID: must be a UUID", what)
	}
	return u.String(), nil
}

// checkPaging applies the default limit to *limit (0 means unset) and checks
// both bounds.
func checkPaging(limit, offset *int) error {
	if *limit == 0 {
		*limit = SearchLimitDefault
	}
	if *limit < 1 || *limit > SearchLimitMax {
		return Errorf(EINVALID, "Invalid limit %d: must be between 1 and %d", *limit, SearchLimitMax)
	}
	if *offset < 0 {
		return Errorf(EINVALID, "Invalid offset %d: must be 0 or more", *offset)
	}
	return nil
}

// checkEnum sets *v to def when empty and checks it is one of allowed.
func checkEnum(field string, v *string, def string, allowed []string) error {
	if *v == "" {
		*v = def
	}
	if !slices.Contains(allowed, *v) {
		return Errorf(EINVALID, "Invalid %s %q: must be one of %s", field, *v, strings.Join(allowed, ", "))
	}
	return nil
}

// checkSort validates and defaults a search's sort_by and sort_order.
func checkSort(sortBy, sortOrder *string, defBy string, allowed []string) error {
	if err := checkEnum("sort_by", sortBy, defBy, allowed); err != nil {
		return err
	}
	*sortOrder = strings.ToLower(*sortOrder)
	return checkEnum("sort_order", sortOrder, "desc", []string{"asc", "desc"})
}

// checkSelect checks that every selected field is one of allowed.
func checkSelect(sel, allowed []string) error {
	for _, f := range sel {
		if !slices.Contains(allowed, f) {
			return Errorf(EINVALID, "Invalid select field %q: must be among %s", f, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// checkIfExists validates and defaults an if_exists value.
func checkIfExists(v *string) error {
	return checkEnum("if_exists", v, IfExistsRaise, []string{IfExistsRaise, IfExistsDoNothing})
}

// checkConfigContext rejects a config whose configurable is set together
// with a non-empty context, as the Platform does.
func checkConfigContext(config, context Object) error {
	if len(context) == 0 {
		return nil
	}
	switch c := config["configurable"].(type) {
	case map[string]any:
		if len(c) == 0 {
			return nil
		}
	case Object:
		if len(c) == 0 {
			return nil
		}
	default:
		return nil
	}
	return Errorf(EBADREQUEST, "Cannot specify both configurable and context. Prefer setting context alone.")
}
