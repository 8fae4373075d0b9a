package window

import (
	"strings"
	"testing"
)

func TestParseDuration(t *testing.T) {
	ok := []struct {
		in   string
		want int64
	}{
		{"500ms", 500},
		{"1ms", 1},
		{"10s", 10_000},
		{"5m", 300_000},
		{"1h", 3_600_000},
		{"1d", 86_400_000},
		{"1m30s", 90_000},
		{"1h30m", 5_400_000},
		{"1d2h3m4s5ms", 93_784_005},
		{"30s1m", 90_000},
		{"007s", 7_000},
		{"0s5ms", 5},
		{"9223372036854775807ms", maxI},
		{"106751991167d", 106_751_991_167 * 86_400_000},
	}
	for _, tt := range ok {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	bad := []struct{ in, why string }{
		{"", "empty"},
		{"0s", "positive"},
		{"0ms", "positive"},
		{"0d0h", "positive"},
		{"-5s", "positive"},
		{"5", "missing unit"},
		{"1m30", "missing unit"},
		{"s", "expected a number"},
		{"+5s", "expected a number"},
		{" 5s", "expected a number"},
		{"5 s", "unknown unit"},
		{"5x", "unknown unit"},
		{"5S", "unknown unit"},
		{"5sec", "unknown unit"},
		{"5s-", "unknown unit"},
		{"1.5s", "fractions"},
		{"9223372036854775808ms", "out of range"},
		{"106751991168d", "out of range"},
		{"9223372036854775807ms1ms", "out of range"},
	}
	for _, tt := range bad {
		got, err := ParseDuration(tt.in)
		if err == nil {
			t.Errorf("ParseDuration(%q) = %d, want an error", tt.in, got)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `"`+tt.in+`"`) {
			t.Errorf("ParseDuration(%q) error %q does not quote the text", tt.in, msg)
		}
		if !strings.Contains(msg, tt.why) {
			t.Errorf("ParseDuration(%q) error %q does not say %q", tt.in, msg, tt.why)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{500, "500ms"},
		{1, "1ms"},
		{1_000, "1s"},
		{1_500, "1500ms"},
		{10_000, "10s"},
		{60_000, "1m"},
		{90_000, "90s"},
		{300_000, "5m"},
		{3_600_000, "1h"},
		{5_400_000, "90m"},
		{86_400_000, "1d"},
		{90_000_000, "25h"},
		{172_800_000, "2d"},
		{0, "0s"},
		{-1_000, "-1s"},
		{-1, "-1ms"},
		{maxI, "9223372036854775807ms"},
		{minI, "-9223372036854775808ms"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.ms); got != tt.want {
			t.Errorf("FormatDuration(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}
