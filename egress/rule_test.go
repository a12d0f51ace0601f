package egress

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	web := DefaultPorts
	tests := []struct {
		in   string
		want Rule
	}{
		{"pypi.org", Rule{Host: "pypi.org", Ports: web}},
		{"PyPI.org.", Rule{Host: "pypi.org", Ports: web}},
		{"*.githubusercontent.com", Rule{Host: "githubusercontent.com", Wildcard: true, Ports: web}},
		{"api.example.com:8443", Rule{Host: "api.example.com", Ports: []int{8443}}},
		{"*.example.com:22", Rule{Host: "example.com", Wildcard: true, Ports: []int{22}}},
		{"_acme.example.com", Rule{Host: "_acme.example.com", Ports: web}},
		{"localhost", Rule{Host: "localhost", Ports: web}},
		{"203.0.113.7", Rule{Prefix: netip.MustParsePrefix("203.0.113.7/32"), Ports: web}},
		{"203.0.113.7:5432", Rule{Prefix: netip.MustParsePrefix("203.0.113.7/32"), Ports: []int{5432}}},
		{"2001:db8::1", Rule{Prefix: netip.MustParsePrefix("2001:db8::1/128"), Ports: web}},
		{"[2001:db8::1]", Rule{Prefix: netip.MustParsePrefix("2001:db8::1/128"), Ports: web}},
		{"[2001:db8::1]:8443", Rule{Prefix: netip.MustParsePrefix("2001:db8::1/128"), Ports: []int{8443}}},
		{"::ffff:10.1.2.3", Rule{Prefix: netip.MustParsePrefix("10.1.2.3/32"), Ports: web}},
		{"10.20.0.0/16", Rule{Prefix: netip.MustParsePrefix("10.20.0.0/16"), Ports: web}},
		{"10.20.0.0/16:5432", Rule{Prefix: netip.MustParsePrefix("10.20.0.0/16"), Ports: []int{5432}}},
		{"fd00::/8", Rule{Prefix: netip.MustParsePrefix("fd00::/8"), Ports: web}},
		{"[fd00::/8]:443", Rule{Prefix: netip.MustParsePrefix("fd00::/8"), Ports: []int{443}}},
		{"::ffff:10.0.0.0/104", Rule{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: web}},
		{"  pypi.org  ", Rule{Host: "pypi.org", Ports: web}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRule(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Entry = tt.in
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseRule(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseRuleErrors(t *testing.T) {
	tests := []struct{ in, reason string }{
		{"", "empty entry"},
		{"https://pypi.org", "not a URL"},
		{"pypi.org/simple", "not an address range"},
		{"pypi.org:0", "from 1 to 65535"},
		{"pypi.org:65536", "from 1 to 65535"},
		{"pypi.org:https", "from 1 to 65535"},
		{"pypi.org:+443", "from 1 to 65535"},
		{"*", "whole first label"},
		{"*.com", "too broad"},
		{"a.*.example.com", "whole first label"},
		{"foo*.example.com", "whole first label"},
		{"-bad.example.com", "starts or ends with '-'"},
		{"a..b", "1 to 63 characters"},
		{"exa mple.com", "not allowed in a host name"},
		{"bücher.de", "punycode"},
		{"10.20.1.0/16", "did you mean 10.20.0.0/16"},
		{"10.0.0.0/33", "not an address range"},
		{"[2001:db8::1", `missing "]"`},
		{"[2001:db8::1]8443", `only ":PORT"`},
		{"fe80::1%eth0", "zone"},
		{strings.Repeat("a", 64) + ".com", "1 to 63 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseRule(tt.in)
			var re *RuleError
			if !errors.As(err, &re) {
				t.Fatalf("ParseRule(%q) = %v, want a *RuleError", tt.in, err)
			}
			if !strings.Contains(re.Reason, tt.reason) || re.Entry != tt.in {
				t.Errorf("ParseRule(%q) error %q (entry %q), want a reason containing %q",
					tt.in, re.Reason, re.Entry, tt.reason)
			}
		})
	}
}

func TestParseRulesReportsEveryBadEntryWithItsIndex(t *testing.T) {
	_, err := ParseRules([]string{"pypi.org", "*.com", "ok.example.com", "https://x.org"})
	var errs RuleErrors
	if !errors.As(err, &errs) {
		t.Fatalf("ParseRules error %v is not RuleErrors", err)
	}
	if len(errs) != 2 || errs[0].Index != 1 || errs[1].Index != 3 {
		t.Fatalf("got %v, want entries 1 and 3", err)
	}
	var one *RuleError
	if !errors.As(err, &one) || one.Index != 1 {
		t.Errorf("errors.As found %+v, want the first bad entry", one)
	}
	if !strings.Contains(err.Error(), `allow entry 2 ("*.com")`) {
		t.Errorf("message %q does not name the entry", err)
	}
}

func TestRuleMatchesName(t *testing.T) {
	tests := []struct {
		rule, host string
		port       int
		want       bool
	}{
		{"pypi.org", "pypi.org", 443, true},
		{"pypi.org", "pypi.org", 80, true},
		{"pypi.org", "pypi.org", 8443, false},
		{"pypi.org", "files.pypi.org", 443, false},
		{"pypi.org", "evilpypi.org", 443, false},
		{"*.githubusercontent.com", "raw.githubusercontent.com", 443, true},
		{"*.githubusercontent.com", "a.b.githubusercontent.com", 443, true},
		{"*.githubusercontent.com", "githubusercontent.com", 443, false},
		{"*.githubusercontent.com", "evilgithubusercontent.com", 443, false},
		{"*.githubusercontent.com", "githubusercontent.com.evil.org", 443, false},
		{"api.example.com:8443", "api.example.com", 8443, true},
		{"api.example.com:8443", "api.example.com", 443, false},
		{"10.20.0.0/16", "10.20.0.1", 443, false}, // address rules never match a name
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.MatchesName(tt.host, tt.port); got != tt.want {
			t.Errorf("%q.MatchesName(%q, %d) = %v, want %v", tt.rule, tt.host, tt.port, got, tt.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAllow, "allow": ModeAllow, "deny": ModeDeny,
		"allowlist": ModeAllowlist} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("Allowlist"); err == nil {
		t.Error("ParseMode accepted a wrongly cased mode")
	}
}
