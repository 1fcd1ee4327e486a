//! The API's history dates as it writes them: `21st Nov 2026 02:15pm`, in UTC.

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// Writes Unix seconds as an API date in UTC, to the minute; `None` outside jiff's range.
pub fn api_date(seconds: i64) -> Option<String> {
    let civil = Timestamp::from_second(seconds)
        .ok()?
        .to_zoned(TimeZone::UTC)
        .datetime();
    let day = civil.day();
    let suffix = match day {
        1 | 21 | 31 => "st",
        2 | 22 => "nd",
        3 | 23 => "rd",
        _ => "th",
    };
    Some(format!("{day}{suffix} {}", civil.strftime("%b %Y %I:%M%P")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_written_with_the_ordinal_day_and_the_12_hour_clock() {
        // 2026-11-21 14:15 UTC, midnight and noon of 2026-01-02, and the 3rd of March.
        assert_eq!(api_date(1_795_270_500).unwrap(), "21st Nov 2026 02:15pm");
        assert_eq!(api_date(1_767_312_000).unwrap(), "2nd Jan 2026 12:00am");
        assert_eq!(api_date(1_767_355_200).unwrap(), "2nd Jan 2026 12:00pm");
        assert_eq!(api_date(1_772_550_060).unwrap(), "3rd Mar 2026 03:01pm");
        assert_eq!(
            api_date(1_767_225_600 + 10 * 86_400).unwrap(),
            "11th Jan 2026 12:00am"
        );
    }
}
