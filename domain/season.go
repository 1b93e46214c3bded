package domain

import "strconv"

// ValidateSeasonID checks that a season is a four-digit year (1000..9999).
func ValidateSeasonID(s string) error {
	if len(s) != 4 || s[0] == '0' {
		return Invalid("seasonID must be a four-digit year such as 2024, got %q", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return Invalid("seasonID must be a four-digit year such as 2024, got %q", s)
		}
	}
	return nil
}

// SeasonFromInt turns a season given as a number (the API's
// getResortSkiersDay path carries it as an int32) into its text form.
func SeasonFromInt(year int32) (string, error) {
	s := strconv.FormatInt(int64(year), 10)
	if err := ValidateSeasonID(s); err != nil {
		return "", err
	}
	return s, nil
}
