// Package style holds the repository's style checks as tests, so that
// `make test` fails on them rather than a reviewer.
package style
