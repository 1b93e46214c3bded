package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// resorts registers the resorts an operator runs (`skiapi resorts put`,
// `import`) and lists them (`list`), in the store the service's flags name.
// The API has no way to create a resort, so a new deployment's resort table
// is filled this way before its first ride.
func resorts(args []string, stdout, stderr io.Writer) int {
	sub, args, ok := subcommand("resorts", args, []string{"put", "import", "list"}, stderr)
	if !ok {
		return 2
	}
	switch sub {
	case "put":
		var id int64
		var name string
		extra := func(fs *flag.FlagSet) {
			fs.Int64Var(&id, "id", 0, "resort id (a positive whole number)")
			fs.StringVar(&name, "name", "", "resort name")
		}
		return oneShotWith("resorts put", args, extra, stdout, stderr, func(ctx context.Context, cfg compose.Config) (string, error) {
			r, err := newResort(id, name)
			if err != nil {
				return "", usageErr(fmt.Errorf("--id %d --name %q: %w", id, name, err))
			}
			return saveResorts(ctx, cfg, []domain.Resort{r})
		})
	case "import":
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			fmt.Fprintln(stderr, "skiapi: resorts import needs the CSV file first: skiapi resorts import FILE [flags] (a header row id,name)")
			return 2
		}
		file, args := args[0], args[1:]
		return oneShot("resorts import", args, stdout, stderr, func(ctx context.Context, cfg compose.Config) (string, error) {
			rs, err := readResortsFile(file)
			if err != nil {
				return "", usageErr(err)
			}
			return saveResorts(ctx, cfg, rs)
		})
	default:
		return oneShot("resorts list", args, stdout, stderr, func(ctx context.Context, cfg compose.Config) (string, error) {
			_, all, closeStore, err := openResorts(ctx, cfg)
			if err != nil {
				return "", err
			}
			closeStore()
			return resortsCSV(all), nil
		})
	}
}

// newResort is a resort as the domain accepts it: the id a positive 32-bit
// number (the API's resortID), the name not blank, surrounding spaces
// dropped.
func newResort(id int64, name string) (domain.Resort, error) {
	if int64(domain.ResortID(id)) != id {
		return domain.Resort{}, domain.Invalid("resortID %d is out of range", id)
	}
	return domain.NewResort(domain.ResortID(id), strings.TrimSpace(name))
}

// openResorts opens the resort table of the store cfg names, which must
// outlive the command, and lists the resorts it holds.
func openResorts(ctx context.Context, cfg compose.Config) (ports.ResortStore, []domain.Resort, func(), error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, usageErr(err)
	}
	if err := requireDurableStore(cfg, "register resorts in"); err != nil {
		return nil, nil, nil, err
	}
	st, closeStore, err := compose.OpenStore(ctx, compose.Deps{Config: cfg})
	if err != nil {
		return nil, nil, nil, err
	}
	have, err := st.Resorts.Resorts(ctx)
	if err != nil {
		closeStore()
		return nil, nil, nil, fmt.Errorf("list resorts: %w", err)
	}
	return st.Resorts, have, closeStore, nil
}

// saveResorts writes the resorts that are new or renamed (a resort keeps
// its seasons) and leaves those already there as they are, so running it
// again changes nothing. It says what it did and how many resorts the store
// holds.
func saveResorts(ctx context.Context, cfg compose.Config, want []domain.Resort) (string, error) {
	rs, have, closeStore, err := openResorts(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer closeStore()
	names := make(map[domain.ResortID]string, len(have))
	for _, r := range have {
		names[r.ID] = r.Name
	}
	var added, renamed, unchanged int
	for _, r := range want {
		old, exists := names[r.ID]
		switch {
		case exists && old == r.Name:
			unchanged++
			continue
		case exists:
			renamed++
		default:
			added++
		}
		if err := rs.PutResort(ctx, r); err != nil {
			return "", fmt.Errorf("save resort %d %q: %w", r.ID, r.Name, err)
		}
		names[r.ID] = r.Name
	}
	return fmt.Sprintf("%d added, %d renamed, %d unchanged; the store holds %d resorts", added, renamed, unchanged, len(names)), nil
}

// readResortsFile reads a CSV file of resorts: a header row id,name (a
// third column seasons, as `resorts list` prints, is read too), then one
// resort a row; quoted names may hold commas. Every row is checked before
// anything is written, and a row that is not a valid resort, or repeats an
// id, fails the whole file naming its line.
func readResortsFile(path string) ([]domain.Resort, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rs, err := parseResorts(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

func parseResorts(r io.Reader) ([]domain.Resort, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("empty; want a header row id,name")
	}
	if err != nil {
		return nil, err
	}
	// A file saved by a spreadsheet may start with a byte-order mark.
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	for i := range header {
		header[i] = strings.ToLower(strings.TrimSpace(header[i]))
	}
	withSeasons := len(header) == 3 && header[2] == "seasons"
	if len(header) < 2 || header[0] != "id" || header[1] != "name" || (len(header) > 2 && !withSeasons) {
		return nil, fmt.Errorf("line 1: header %q; want id,name (or id,name,seasons)", strings.Join(header, ","))
	}
	var out []domain.Resort
	lineOf := map[domain.ResortID]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err // csv's errors name the line
		}
		line, _ := cr.FieldPos(0)
		id, err := strconv.ParseInt(strings.TrimSpace(rec[0]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: id %q is not a whole number", line, rec[0])
		}
		res, err := newResort(id, rec[1])
		if err == nil && withSeasons {
			res, err = withSeasonsOf(res, rec[2])
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if first, dup := lineOf[res.ID]; dup {
			return nil, fmt.Errorf("line %d: resort %d is already on line %d", line, res.ID, first)
		}
		lineOf[res.ID] = line
		out = append(out, res)
	}
}

// withSeasonsOf is res with the seasons of a list's column: years
// separated by spaces, each read as the API reads a season.
func withSeasonsOf(res domain.Resort, column string) (domain.Resort, error) {
	var seasons []domain.Season
	for _, f := range strings.Fields(column) {
		s, err := domain.ParseSeason(f)
		if err != nil {
			return domain.Resort{}, err
		}
		seasons = append(seasons, s)
	}
	return domain.NewResort(res.ID, res.Name, seasons...)
}

// resortsCSV is the resorts as `resorts import` reads them back: a header
// id,name,seasons, one resort a row, its seasons separated by spaces.
func resortsCSV(rs []domain.Resort) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"id", "name", "seasons"})
	for _, r := range rs {
		seasons := make([]string, len(r.Seasons))
		for i, s := range r.Seasons {
			seasons[i] = s.String()
		}
		_ = w.Write([]string{strconv.Itoa(int(r.ID)), r.Name, strings.Join(seasons, " ")})
	}
	w.Flush()
	return b.String()
}
