package bench

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// reportWidth is the widest line a report may print: a terminal of 120
// columns shows it without wrapping.
const reportWidth = 120

// report is a two-column table of results followed by notes: what would
// make a cell too wide to read in a terminal (every replica left out of
// the CPU figures with its reason, the problems of a failed run) goes
// below the table, one note per line, wrapped.
type report struct {
	rows  [][2]string
	notes []string
}

func (r *report) row(name, value string) { r.rows = append(r.rows, [2]string{name, value}) }

// note adds a line below the table.
func (r *report) note(s string) { r.notes = append(r.notes, s) }

// render writes the table, its value column wrapped at word boundaries so
// that no line is wider than reportWidth, then the notes, wrapped likewise
// with a hanging indent.
func (r *report) render(w io.Writer) error {
	nameWidth := len("result")
	for _, row := range r.rows {
		nameWidth = max(nameWidth, utf8.RuneCountInString(row[0]))
	}
	// "│ name │ value │": 7 columns of borders and padding.
	valueWidth := max(reportWidth-nameWidth-7, 20)
	t := tablewriter.NewTable(w, tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoWrap(tw.WrapNone))
	t.Header("result", "value")
	for _, row := range r.rows {
		if err := t.Append([]string{row[0], strings.Join(wrapText(row[1], valueWidth, ""), "\n")}); err != nil {
			return fmt.Errorf("bench report: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("bench report: %w", err)
	}
	for _, n := range r.notes {
		for _, line := range wrapText(n, reportWidth, "    ") {
			if _, err := fmt.Fprintln(w, line); err != nil {
				return fmt.Errorf("bench report: %w", err)
			}
		}
	}
	return nil
}

// wrapText breaks s into lines of at most width runes at spaces; a word
// longer than a line is cut. Lines after the first start with indent.
func wrapText(s string, width int, indent string) []string {
	indentLen := utf8.RuneCountInString(indent)
	var lines []string
	line, n, empty := "", 0, true
	newLine := func() {
		lines = append(lines, line)
		line, n, empty = indent, indentLen, true
	}
	for _, word := range strings.Fields(s) {
		wl := utf8.RuneCountInString(word)
		if !empty && n+1+wl > width {
			newLine()
		}
		if !empty {
			line += " "
			n++
		}
		// On a line of its own, a word longer than the line is cut.
		for room := width - n; wl > room && room > 0; room = width - n {
			head, rest := splitRunes(word, room)
			line += head
			newLine()
			word, wl = rest, wl-room
		}
		line += word
		n += wl
		empty = false
	}
	return append(lines, line)
}

// splitRunes splits s after n runes.
func splitRunes(s string, n int) (string, string) {
	i := 0
	for k := range s {
		if i == n {
			return s[:k], s[k:]
		}
		i++
	}
	return s, ""
}
