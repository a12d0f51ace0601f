package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/sandboxforge/sbf/internal/coded"
)

// argsSchema checks a tool's arguments against the input schema it
// advertises. mcp-go's own check answers in Go's text (&{Got:string
// Want:[null integer]}); this one answers in the v1 envelope, naming the
// field.
type argsSchema struct {
	tool   string
	schema *jsonschema.Schema
}

func compileArgs(tool mcp.Tool) *argsSchema {
	raw := tool.RawInputSchema
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(tool.InputSchema); err != nil {
			panic(fmt.Sprintf("tool %s: encoding its input schema: %v", tool.Name, err))
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		panic(fmt.Sprintf("tool %s: reading its input schema: %v", tool.Name, err))
	}
	c := jsonschema.NewCompiler()
	url := "mem:///sbf/tools/" + tool.Name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		panic(fmt.Sprintf("tool %s: %v", tool.Name, err))
	}
	sch, err := c.Compile(url)
	if err != nil {
		panic(fmt.Sprintf("tool %s: compiling its input schema: %v", tool.Name, err))
	}
	return &argsSchema{tool: tool.Name, schema: sch}
}

// Unknown arguments are ignored, as v1 did (FastMCP's argument models
// drop extra keys), and named in the result's warnings. At most
// maxIgnoredNamed are named, each cut to maxIgnoredName bytes, so an
// answer never grows with the request.
const (
	maxIgnoredNamed = 20
	maxIgnoredName  = 64
)

// known returns the arguments without the top-level keys the tool does
// not take, and a warning for each key it dropped (sorted, so answers are
// deterministic). Arguments that are not an object are left for check to
// reject.
func (a *argsSchema) known(args any) (any, []string) {
	m, ok := args.(map[string]any)
	if !ok {
		return args, nil
	}
	var unknown []string
	for k := range m {
		if _, ok := a.schema.Properties[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return args, nil
	}
	kept := make(map[string]any, len(m)-len(unknown))
	for k, v := range m {
		if _, ok := a.schema.Properties[k]; ok {
			kept[k] = v
		}
	}
	slices.Sort(unknown)
	var warnings []string
	for i, k := range unknown {
		if i == maxIgnoredNamed {
			warnings = append(warnings, fmt.Sprintf("… and %d more unknown arguments ignored", len(unknown)-i))
			break
		}
		warnings = append(warnings, fmt.Sprintf("unknown argument %q ignored", clipTo(k, maxIgnoredName)))
	}
	return kept, warnings
}

// check returns INVALID_ARGUMENTS naming every field that is wrong, or nil.
func (a *argsSchema) check(args any) *coded.Error {
	if args == nil {
		args = map[string]any{}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return a.invalid([]argProblem{{Message: "arguments are not JSON: " + err.Error()}})
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return a.invalid([]argProblem{{Message: "arguments are not JSON: " + err.Error()}})
	}
	err = a.schema.Validate(v)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &ve) {
		return a.invalid([]argProblem{{Message: err.Error()}})
	}
	return a.invalid(problems(ve))
}

type argProblem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// problems flattens the validator's tree to its leaves, one per field.
func problems(ve *jsonschema.ValidationError) []argProblem {
	if len(ve.Causes) > 0 {
		var out []argProblem
		for _, c := range ve.Causes {
			out = append(out, problems(c)...)
		}
		return out
	}
	field := strings.Join(ve.InstanceLocation, ".")
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		return []argProblem{{Field: childField(field, k.Missing[0]), Message: "is required"}}
	case *kind.AdditionalProperties:
		return []argProblem{{Field: childField(field, k.Properties[0]), Message: "is not a parameter of this tool"}}
	case *kind.Type:
		return []argProblem{{Field: field, Message: fmt.Sprintf("must be %s (got %s)", strings.Join(k.Want, " or "), k.Got)}}
	}
	return []argProblem{{Field: field, Message: ve.BasicOutput().Error.String()}}
}

func childField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func (a *argsSchema) invalid(ps []argProblem) *coded.Error {
	var msgs []string
	for i := range ps {
		ps[i].Field, ps[i].Message = clip(ps[i].Field), clip(ps[i].Message)
		msgs = append(msgs, strings.TrimPrefix(ps[i].Field+" "+ps[i].Message, " "))
	}
	return newToolError(coded.InvalidArguments, a.tool+": "+strings.Join(msgs, "; "),
		map[string]any{"tool": a.tool, "field": ps[0].Field, "errors": ps})
}
