package service

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// ParseUnit reads back what a unit written by Render runs: ExecStart='s
// words and the Environment= variables, unquoted as systemd does. It
// refuses what Render never writes (specifiers such as %h, $VARIABLE
// expansion, several ExecStart= lines), so what it returns is exactly
// what systemd would run.
func ParseUnit(data []byte) (argv []string, env []EnvVar, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	section := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		if section != "[Service]" {
			continue
		}
		switch strings.TrimSpace(k) {
		case "ExecStart":
			if argv != nil {
				return nil, nil, fmt.Errorf("more than one ExecStart= line")
			}
			if argv, err = unitWords(v, true); err != nil {
				return nil, nil, fmt.Errorf("the ExecStart= line: %w", err)
			}
		case "Environment":
			words, err := unitWords(v, false)
			if err != nil {
				return nil, nil, fmt.Errorf("an Environment= line: %w", err)
			}
			for _, w := range words {
				name, value, ok := strings.Cut(w, "=")
				if !ok {
					return nil, nil, fmt.Errorf("an Environment= line: %q is not NAME=VALUE", w)
				}
				env = append(env, EnvVar{name, value})
			}
		}
	}
	if len(argv) == 0 {
		return nil, nil, fmt.Errorf("the unit has no ExecStart= line")
	}
	return argv, env, sc.Err()
}

// unitWords splits a value at blanks outside quotes, undoing C-style
// escapes, %% and, where exec, $$.
func unitWords(v string, exec bool) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	rs := []rune(strings.TrimSpace(v))
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote == 0 && (c == ' ' || c == '\t'):
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
			continue
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case c == quote:
			quote = 0
		case c == '\\':
			if i++; i == len(rs) {
				return nil, fmt.Errorf("a trailing backslash")
			}
			e, ok := map[rune]rune{'\\': '\\', '"': '"', '\'': '\'', 'n': '\n', 't': '\t', ' ': ' '}[rs[i]]
			if !ok {
				return nil, fmt.Errorf("the escape \\%c is not one sbf writes", rs[i])
			}
			w.WriteRune(e)
		case c == '%' || exec && c == '$':
			if i+1 == len(rs) || rs[i+1] != c {
				what := map[rune]string{'%': "specifier", '$': "variable"}[c]
				return nil, fmt.Errorf("%q expands a systemd %s, which sbf never writes", string(rs[i:]), what)
			}
			i++
			w.WriteRune(c)
		default:
			w.WriteRune(c)
		}
		inWord = true
	}
	if quote != 0 {
		return nil, fmt.Errorf("an unterminated quote")
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
