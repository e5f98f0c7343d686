module github.com/graphserver/graphserver

go 1.25.0

require github.com/google/uuid v1.6.0
