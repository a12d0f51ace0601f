package mcpserver

import (
	"context"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/sandbox"
)

// Guest files moved, copied and probed (issue 31): guest paths only, with
// the same path rules as the file tools (files.go). A copy between two
// sandboxes goes through the host as a tar stream and stops at the
// operator's copy ceiling.

type relocateArgs struct {
	InstanceID  string `json:"instance_id"`
	Src         string `json:"src" jsonschema:"Guest file, link or folder; a relative path is relative to the guest user's home."`
	Dst         string `json:"dst" jsonschema:"Guest path it goes to (the full new path, not a folder to put it in)."`
	Overwrite   bool   `json:"overwrite,omitempty" jsonschema:"Replace what is at dst (a folder with everything in it); without it an existing dst is refused."`
	MakeParents bool   `json:"make_parents,omitempty" jsonschema:"Create dst's missing parent folders."`
}

type copyPathArgs struct {
	relocateArgs
	DstInstanceID string `json:"dst_instance_id,omitempty" jsonschema:"Copy into this other instance of the same workspace (default: the same instance)."`
}

func (a relocateArgs) relocation() sandbox.Relocation {
	return sandbox.Relocation{Src: a.Src, Dst: a.Dst, Overwrite: a.Overwrite, MakeParents: a.MakeParents}
}

type moveResult struct {
	InstanceID string `json:"instance_id"`
	Src        string `json:"src"`
	Dst        string `json:"dst"`
	Moved      bool   `json:"moved"`
}

type copyPathResult struct {
	InstanceID string `json:"instance_id"`
	Src        string `json:"src"`
	Dst        string `json:"dst"`
	Copied     bool   `json:"copied"`
	*copyAcross
}

// copyAcross is what a copy into another instance adds.
type copyAcross struct {
	DstInstanceID string `json:"dst_instance_id"`
	ArchiveBytes  int64  `json:"archive_bytes"`
}

type existsResult struct {
	InstanceID string  `json:"instance_id"`
	Path       string  `json:"path"`
	Exists     bool    `json:"exists"`
	Type       *string `json:"type" jsonschema:"file, dir, link or other."`
}

func (s *Server) movePath(ctx context.Context, a relocateArgs) (*moveResult, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	if err := tgt.MovePath(ctx, a.relocation()); err != nil {
		return nil, err
	}
	return &moveResult{a.InstanceID, a.Src, a.Dst, true}, nil
}

func (s *Server) copyPath(ctx context.Context, a copyPathArgs) (*copyPathResult, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	out := &copyPathResult{InstanceID: a.InstanceID, Src: a.Src, Dst: a.Dst, Copied: true}
	if a.DstInstanceID == "" || a.DstInstanceID == a.InstanceID {
		if err := tgt.CopyPath(ctx, a.relocation()); err != nil {
			return nil, err
		}
		return out, nil
	}
	dst, _, err := s.target(ctx, a.DstInstanceID)
	if err != nil {
		return nil, err
	}
	if dst.Resolved.WorkspaceID != tgt.Resolved.WorkspaceID {
		return nil, newToolError(coded.InvalidArguments, "dst_instance_id is an instance of another workspace; "+
			"copy_path copies between instances of one workspace (copy through the host with copy_from_instance "+
			"and copy_to_instance instead)", map[string]any{"field": "dst_instance_id"})
	}
	ceiling := s.cfg.Engine.Policy.Ceilings.Defaulted().MaxCopyBytes.Value
	n, err := sandbox.CopyBetween(ctx, tgt, dst, a.relocation(), ceiling)
	if err != nil {
		return nil, err
	}
	out.copyAcross = &copyAcross{a.DstInstanceID, n}
	return out, nil
}

func (s *Server) pathExists(ctx context.Context, a guestPathArgs) (*existsResult, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	ok, kind, err := tgt.PathExists(ctx, a.Path)
	if err != nil {
		return nil, err
	}
	out := &existsResult{InstanceID: a.InstanceID, Path: a.Path, Exists: ok}
	if ok {
		out.Type = &kind
	}
	return out, nil
}
