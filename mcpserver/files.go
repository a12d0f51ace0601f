package mcpserver

import (
	"context"
	"encoding/base64"
	"io/fs"
	"unicode/utf8"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/sandbox"
)

// The guest file tools act on guest paths only (the sandbox package runs
// them in the guest); host paths stay with the copy and sync tools and
// their host-path policy.

type readFileArgs struct {
	InstanceID string `json:"instance_id"`
	Path       string `json:"path" jsonschema:"Guest file; a relative path is relative to the guest user's home."`
	Encoding   string `json:"encoding,omitempty" jsonschema:"utf8 or base64. Default: utf8 when the bytes are UTF-8, else base64 (the result says which)."`
	Offset     *int64 `json:"offset,omitempty" default:"0" jsonschema:"Byte to start at."`
	Limit      *int   `json:"limit,omitempty" default:"1048576" jsonschema:"Bytes to read; truncated and next_offset say whether more follows."`
}

type writeFileArgs struct {
	InstanceID  string `json:"instance_id"`
	Path        string `json:"path" jsonschema:"Guest file to create or replace (atomically: a reader sees the old file or the new one)."`
	Content     string `json:"content" jsonschema:"The whole new content (at most 8 MiB once decoded)."`
	Encoding    string `json:"encoding,omitempty" default:"\"utf8\"" jsonschema:"utf8 or base64: how content is encoded."`
	Mode        string `json:"mode,omitempty" jsonschema:"Octal permissions such as 0644; default: an existing file's, else 0644."`
	MakeParents bool   `json:"make_parents,omitempty" jsonschema:"Create missing parent folders."`
}

type listFilesArgs struct {
	InstanceID string `json:"instance_id"`
	Path       string `json:"path" jsonschema:"Guest folder."`
	Recursive  bool   `json:"recursive,omitempty" jsonschema:"List everything below the folder, not only its entries."`
	Limit      *int   `json:"limit,omitempty" default:"1000" jsonschema:"Entries to return; truncated says whether there were more."`
}

type guestPathArgs struct {
	InstanceID string `json:"instance_id"`
	Path       string `json:"path" jsonschema:"Guest path."`
}

type removePathArgs struct {
	InstanceID string `json:"instance_id"`
	Path       string `json:"path" jsonschema:"Guest file, link or folder to remove (a link is removed, not followed)."`
	Recursive  bool   `json:"recursive,omitempty" jsonschema:"Remove a folder with everything in it (without: only an empty one)."`
}

type makeDirArgs struct {
	InstanceID string `json:"instance_id"`
	Path       string `json:"path" jsonschema:"Guest folder to create."`
	Mode       string `json:"mode,omitempty" default:"\"0755\"" jsonschema:"Octal permissions."`
	Parents    *bool  `json:"parents,omitempty" default:"true" jsonschema:"Create missing parent folders too."`
}

type readFileResult struct {
	InstanceID string `json:"instance_id"`
	Path       string `json:"path"`
	Content    string `json:"content"`
	Encoding   string `json:"encoding" jsonschema:"utf8 or base64."`
	Size       int64  `json:"size" jsonschema:"The file's size."`
	Offset     int64  `json:"offset"`
	BytesRead  int    `json:"bytes_read"`
	Truncated  bool   `json:"truncated" jsonschema:"More follows."`
	NextOffset int64  `json:"next_offset" jsonschema:"Where to read on."`
}

type writeFileResult struct {
	InstanceID   string `json:"instance_id"`
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
	Mode         string `json:"mode"`
	Status       string `json:"status"`
}

type listFilesResult struct {
	InstanceID string      `json:"instance_id"`
	Path       string      `json:"path"`
	Recursive  bool        `json:"recursive"`
	Entries    []entryInfo `json:"entries" jsonschema:"Each entry's path, type, size, mode and modified."`
	Count      int         `json:"count"`
	Truncated  bool        `json:"truncated"`
}

// entryInfo is a guest path as list_files and stat_path answer it.
type entryInfo struct {
	Path string `json:"path"`
	*entryFacts
}

type entryFacts struct {
	Type       string `json:"type"`
	Size       int64  `json:"size"`
	Mode       string `json:"mode"`
	Modified   string `json:"modified"`
	LinkTarget string `json:"link_target,omitempty"`
}

type statResult struct {
	InstanceID string `json:"instance_id"`
	Exists     bool   `json:"exists"`
	entryInfo
}

type removeResult struct {
	InstanceID string `json:"instance_id"`
	Path       string `json:"path"`
	Removed    bool   `json:"removed"`
}

type makeDirResult struct {
	InstanceID string `json:"instance_id"`
	Path       string `json:"path"`
	Created    bool   `json:"created"`
}

func (s *Server) readFile(ctx context.Context, a readFileArgs) (*readFileResult, error) {
	if a.Encoding != "" && a.Encoding != "utf8" && a.Encoding != "base64" {
		return nil, badEncoding(a.Encoding)
	}
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	var offset int64
	limit := 0
	if a.Offset != nil {
		offset = *a.Offset
	}
	if a.Limit != nil {
		if limit = *a.Limit; limit <= 0 {
			return nil, newToolError(coded.InvalidArguments, "limit must be positive", map[string]any{"field": "limit"})
		}
	}
	r, err := tgt.ReadFile(ctx, a.Path, offset, limit)
	if err != nil {
		return nil, err
	}
	content, encoding, err := encodeContent(&r, a.Encoding)
	if err != nil {
		return nil, err
	}
	content = fitContent(&r, content, encoding)
	return &readFileResult{a.InstanceID, a.Path, content, encoding, r.Size, r.Offset, len(r.Data), r.Truncated,
		r.NextOffset}, nil
}

// contentShare is what a read's content may take of an answer: the rest
// of the budget carries the other fields.
const contentShare = responseBudget - 64<<10

// fitContent shortens a read whose content an answer cannot carry whole
// (budget.go: 4 MiB of text, or less of text that JSON escapes) and moves
// next_offset back to match, so reading on from it misses nothing.
func fitContent(r *sandbox.ReadResult, content, encoding string) string {
	if stringCost(content) <= contentShare {
		return content
	}
	keep := len(headByCost(content, contentShare))
	if encoding == "base64" { // whole groups of 4, each 3 bytes of the file
		keep = keep / 4 * 3
		r.Data = r.Data[:keep]
		content = base64.StdEncoding.EncodeToString(r.Data)
	} else {
		r.Data, content = r.Data[:keep], content[:keep]
	}
	r.NextOffset, r.Truncated = r.Offset+int64(keep), true
	return content
}

// encodeContent renders what was read as asked; without an encoding,
// UTF-8 text is text and anything else base64. A UTF-8 character cut by
// the limit is left for the next read.
func encodeContent(r *sandbox.ReadResult, encoding string) (string, string, error) {
	if encoding == "base64" {
		return base64.StdEncoding.EncodeToString(r.Data), "base64", nil
	}
	data := r.Data
	if r.Truncated && !utf8.Valid(data) {
		for cut := 1; cut <= 3 && cut <= len(data); cut++ {
			if utf8.Valid(data[:len(data)-cut]) {
				data = data[:len(data)-cut]
				break
			}
		}
	}
	if utf8.Valid(data) {
		r.Data, r.NextOffset = data, r.Offset+int64(len(data))
		return string(data), "utf8", nil
	}
	if encoding == "utf8" {
		return "", "", newToolError(coded.InvalidArguments, "the file is not UTF-8 text; read it with encoding base64",
			map[string]any{"field": "encoding", "path": r.Path})
	}
	return base64.StdEncoding.EncodeToString(r.Data), "base64", nil
}

func badEncoding(e string) error {
	return newToolError(coded.InvalidArguments, "encoding must be utf8 or base64, not "+clip(e),
		map[string]any{"field": "encoding"})
}

func (s *Server) writeFile(ctx context.Context, a writeFileArgs) (*writeFileResult, error) {
	data := []byte(a.Content)
	switch a.Encoding {
	case "", "utf8":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(a.Content); err != nil {
			return nil, newToolError(coded.InvalidArguments, "content is not base64: "+clip(err.Error()),
				map[string]any{"field": "content"})
		}
	default:
		return nil, badEncoding(a.Encoding)
	}
	mode, err := optionalMode(a.Mode)
	if err != nil {
		return nil, err
	}
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	w, err := tgt.WriteFile(ctx, sandbox.WriteRequest{Path: a.Path, Data: data, Mode: mode, MakeParents: a.MakeParents})
	if err != nil {
		return nil, err
	}
	return &writeFileResult{a.InstanceID, a.Path, w.Bytes, w.Mode, "ok"}, nil
}

func optionalMode(m string) (*fs.FileMode, error) {
	if m == "" {
		return nil, nil
	}
	mode, err := sandbox.ParseMode("mode", m)
	return &mode, err
}

func (s *Server) listFiles(ctx context.Context, a listFilesArgs) (*listFilesResult, error) {
	limit := 0
	if a.Limit != nil {
		if limit = *a.Limit; limit <= 0 {
			return nil, newToolError(coded.InvalidArguments, "limit must be positive", map[string]any{"field": "limit"})
		}
	}
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	l, err := tgt.ListFiles(ctx, a.Path, a.Recursive, limit)
	if err != nil {
		return nil, err
	}
	entries := make([]entryInfo, 0, len(l.Entries))
	for _, e := range l.Entries {
		entries = append(entries, entryJSON(e))
	}
	return &listFilesResult{a.InstanceID, a.Path, a.Recursive, entries, len(entries), l.Truncated}, nil
}

func entryJSON(e sandbox.Entry) entryInfo {
	return entryInfo{e.Path, &entryFacts{e.Type, e.Size, e.Mode, iso(e.Modified), e.LinkTarget}}
}

func (s *Server) statPath(ctx context.Context, a guestPathArgs) (*statResult, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	e, ok, err := tgt.StatPath(ctx, a.Path)
	if err != nil {
		return nil, err
	}
	out := &statResult{InstanceID: a.InstanceID, Exists: ok, entryInfo: entryInfo{Path: a.Path}}
	if ok {
		out.entryInfo = entryJSON(e)
	}
	return out, nil
}

func (s *Server) removePath(ctx context.Context, a removePathArgs) (*removeResult, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	existed, err := tgt.RemovePath(ctx, a.Path, a.Recursive)
	if err != nil {
		return nil, err
	}
	return &removeResult{a.InstanceID, a.Path, existed}, nil
}

func (s *Server) makeDir(ctx context.Context, a makeDirArgs) (*makeDirResult, error) {
	mode, err := optionalMode(a.Mode)
	if err != nil {
		return nil, err
	}
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	created, err := tgt.MakeDir(ctx, a.Path, mode, a.Parents == nil || *a.Parents)
	if err != nil {
		return nil, err
	}
	return &makeDirResult{a.InstanceID, a.Path, created}, nil
}
