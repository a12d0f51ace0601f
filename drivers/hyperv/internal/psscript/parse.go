// Package psscript reads back the parameter block of a script the hyperv
// driver generates, following PowerShell's own tokenizer rules for the
// literals it uses. It is the independent check of the driver's quoting:
// the fake powershell and the tests parse every generated script with it,
// so a value that would not reach PowerShell intact fails them.
package psscript

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Script is what a generated script says: its operation and parameters.
type Script struct {
	Op     string
	Params map[string]any // string, int64, bool or []string
	Body   string         // everything after the parameter block
}

// Header, Begin and End frame the parameters; the driver writes them.
const (
	Header = "# sbf hyperv: "
	Begin  = "# parameters\n"
	End    = "# end of parameters\n"
)

// IsSingleQuote reports whether PowerShell's tokenizer treats r as a single
// quote: the ASCII one and four typographic ones (CharTraits.cs,
// IsSingleQuote).
func IsSingleQuote(r rune) bool {
	switch r {
	case '\'', '\u2018', '\u2019', '\u201a', '\u201b':
		return true
	}
	return false
}

// Parse reads a script's operation and parameter block.
func Parse(script string) (Script, error) {
	first, rest, ok := strings.Cut(script, "\n")
	op, hasHeader := strings.CutPrefix(first, Header)
	if !ok || !hasHeader || op == "" {
		return Script{}, fmt.Errorf("first line %q is not %q followed by the operation", first, Header)
	}
	_, params, ok := strings.Cut(rest, Begin)
	if !ok {
		return Script{}, fmt.Errorf("no %q line", strings.TrimSpace(Begin))
	}
	s := Script{Op: op, Params: map[string]any{}}
	p := &parser{src: params}
	for {
		p.skipBlankLines()
		if strings.HasPrefix(p.src[p.pos:], End) {
			s.Body = p.src[p.pos+len(End):]
			return s, nil
		}
		name, value, err := p.assignment()
		if err != nil {
			return Script{}, fmt.Errorf("parameter block, byte %d: %w", p.pos, err)
		}
		if _, dup := s.Params[name]; dup {
			return Script{}, fmt.Errorf("parameter $%s assigned twice", name)
		}
		s.Params[name] = value
	}
}

type parser struct {
	src string
	pos int
}

func (p *parser) peek() rune {
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return r
}

func (p *parser) next() rune {
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return r
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }

func (p *parser) skipBlankLines() {
	for !p.eof() && p.peek() == '\n' {
		p.pos++
	}
}

func (p *parser) skipSpaces() {
	for !p.eof() && p.peek() == ' ' {
		p.pos++
	}
}

func (p *parser) expect(s string) error {
	if !strings.HasPrefix(p.src[p.pos:], s) {
		return fmt.Errorf("want %q, found %.20q", s, p.src[p.pos:])
	}
	p.pos += len(s)
	return nil
}

// assignment reads `$Name = value` and the newline ending it.
func (p *parser) assignment() (string, any, error) {
	if err := p.expect("$"); err != nil {
		return "", nil, err
	}
	start := p.pos
	for !p.eof() && isIdent(p.peek()) {
		p.pos++
	}
	name := p.src[start:p.pos]
	if name == "" {
		return "", nil, fmt.Errorf("a parameter without a name")
	}
	p.skipSpaces()
	if err := p.expect("="); err != nil {
		return "", nil, err
	}
	p.skipSpaces()
	value, err := p.value()
	if err != nil {
		return "", nil, fmt.Errorf("$%s: %w", name, err)
	}
	p.skipSpaces()
	if err := p.expect("\n"); err != nil {
		return "", nil, fmt.Errorf("$%s: after the value: %w", name, err)
	}
	return name, value, nil
}

func isIdent(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func (p *parser) value() (any, error) {
	switch r := p.peek(); {
	case IsSingleQuote(r):
		return p.quoted()
	case r == '@':
		return p.array()
	case r == '$':
		switch {
		case strings.HasPrefix(p.src[p.pos:], "$true"):
			p.pos += len("$true")
			return true, nil
		case strings.HasPrefix(p.src[p.pos:], "$false"):
			p.pos += len("$false")
			return false, nil
		}
		return nil, fmt.Errorf("a variable where a literal belongs: %.20q", p.src[p.pos:])
	case r == '-' || r >= '0' && r <= '9':
		start := p.pos
		p.pos++
		for !p.eof() && p.peek() >= '0' && p.peek() <= '9' {
			p.pos++
		}
		return strconv.ParseInt(p.src[start:p.pos], 10, 64)
	}
	return nil, fmt.Errorf("not a literal: %.20q", p.src[p.pos:])
}

// quoted reads a single-quoted string as PowerShell's ScanStringLiteral
// does: any single-quote character ends it unless another single-quote
// character follows, in which case the second one is kept.
func (p *parser) quoted() (string, error) {
	p.next() // the opening quote, whichever of the five it is
	var b strings.Builder
	for {
		if p.eof() {
			return "", fmt.Errorf("unterminated string %q", b.String())
		}
		c := p.next()
		if IsSingleQuote(c) {
			if p.eof() || !IsSingleQuote(p.peek()) {
				return b.String(), nil
			}
			c = p.next()
		}
		b.WriteRune(c)
	}
}

// array reads @('a', 'b'): the only arrays the driver writes hold strings.
func (p *parser) array() ([]string, error) {
	if err := p.expect("@("); err != nil {
		return nil, err
	}
	out := []string{}
	for {
		p.skipSpaces()
		if !p.eof() && p.peek() == ')' {
			p.pos++
			return out, nil
		}
		if len(out) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
			p.skipSpaces()
		}
		if p.eof() || !IsSingleQuote(p.peek()) {
			return nil, fmt.Errorf("array items must be strings")
		}
		s, err := p.quoted()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}
