//! The API's history dates: `21st Nov 2026 02:15pm`.
//!
//! Day with its English ordinal suffix, abbreviated month, four-digit year, 12-hour time with
//! minutes and am/pm. The zone is not written; it is `asset_reports.timezone` (UTC by default).

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The ordinal suffix English writes after a day of the month.
fn suffix(day: i8) -> &'static str {
    match day {
        1 | 21 | 31 => "st",
        2 | 22 => "nd",
        3 | 23 => "rd",
        _ => "th",
    }
}

/// Parses an API date in `zone`, giving Unix seconds; `None` for anything not of that form or
/// not a real date (31st Feb, a wrong suffix, 13:00pm).
pub fn parse(text: &str, zone: &TimeZone) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let (day, month, year, time) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }

    let digits = day.find(|c: char| !c.is_ascii_digit())?;
    let (day_digits, day_suffix) = day.split_at(digits);
    if day_digits.is_empty() || day_digits.len() > 2 {
        return None;
    }
    let day: i8 = day_digits.parse().ok()?;
    if !day_suffix.eq_ignore_ascii_case(suffix(day)) {
        return None;
    }
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as i8 + 1;
    if year.len() != 4 || !year.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let year: i16 = year.parse().ok()?;

    let (clock, half) = time.split_at(time.len().checked_sub(2)?);
    let pm = match half.to_ascii_lowercase().as_str() {
        "am" => false,
        "pm" => true,
        _ => return None,
    };
    let (hour, minute) = clock.split_once(':')?;
    if hour.is_empty() || hour.len() > 2 || minute.len() != 2 {
        return None;
    }
    let hour: i8 = hour.parse().ok()?;
    let minute: i8 = minute.parse().ok()?;
    if !(1..=12).contains(&hour) {
        return None;
    }
    // 12:05am is five past midnight, 12:05pm five past noon.
    let hour = hour % 12 + if pm { 12 } else { 0 };

    let date = Date::new(year, month, day).ok()?;
    let time = Time::new(hour, minute, 0, 0).ok()?;
    let zoned = DateTime::from_parts(date, time)
        .to_zoned(zone.clone())
        .ok()?;
    Some(zoned.timestamp().as_second() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn utc(text: &str) -> Option<f64> {
        parse(text, &TimeZone::UTC)
    }

    fn at(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> f64 {
        DateTime::from_parts(
            Date::new(y, mo, d).unwrap(),
            Time::new(h, mi, 0, 0).unwrap(),
        )
        .to_zoned(TimeZone::UTC)
        .unwrap()
        .timestamp()
        .as_second() as f64
    }

    #[test]
    fn every_day_of_the_month_with_its_suffix_parses() {
        let expected = [
            "1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th", "9th", "10th", "11th", "12th",
            "13th", "14th", "15th", "16th", "17th", "18th", "19th", "20th", "21st", "22nd", "23rd",
            "24th", "25th", "26th", "27th", "28th", "29th", "30th", "31st",
        ];
        for (i, day) in expected.iter().enumerate() {
            let text = format!("{day} Jan 2026 02:15pm");
            assert_eq!(utc(&text), Some(at(2026, 1, i as i8 + 1, 14, 15)), "{text}");
        }
    }

    #[test]
    fn a_wrong_suffix_is_refused() {
        for text in [
            "1th Jan 2026 01:00am",
            "11st Jan 2026 01:00am",
            "22th Jan 2026 01:00am",
        ] {
            assert_eq!(utc(text), None, "{text}");
        }
    }

    #[test]
    fn midnight_and_noon_follow_the_12_hour_clock() {
        assert_eq!(utc("21st Nov 2026 12:05am"), Some(at(2026, 11, 21, 0, 5)));
        assert_eq!(utc("21st Nov 2026 12:05pm"), Some(at(2026, 11, 21, 12, 5)));
        assert_eq!(utc("21st Nov 2026 11:59pm"), Some(at(2026, 11, 21, 23, 59)));
        assert_eq!(utc("21st Nov 2026 01:00am"), Some(at(2026, 11, 21, 1, 0)));
    }

    #[test]
    fn a_day_the_month_does_not_have_is_refused() {
        assert_eq!(utc("31st Apr 2026 10:00am"), None);
        assert_eq!(utc("29th Feb 2026 10:00am"), None);
        assert_eq!(utc("29th Feb 2028 10:00am"), Some(at(2028, 2, 29, 10, 0)));
    }

    #[test]
    fn garbage_is_refused() {
        for text in [
            "",
            "yesterday",
            "2026-11-21T14:15:00Z",
            "21st Nov 2026",
            "21st Nov 2026 14:15",
            "21st Nov 2026 13:15pm",
            "21st Nov 2026 00:15am",
            "21st Nov 2026 2:5pm",
            "21st Foo 2026 02:15pm",
            "21st Nov 26 02:15pm",
            "21st Nov 2026 02:15pm extra",
            "st Nov 2026 02:15pm",
            "121st Nov 2026 02:15pm",
            "21st Nov 2026 02:15xm",
        ] {
            assert_eq!(utc(text), None, "{text:?}");
        }
    }

    #[test]
    fn a_named_zone_shifts_the_instant() {
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        // Winter: UTC+1.
        assert_eq!(
            parse("21st Nov 2026 02:15pm", &berlin),
            Some(at(2026, 11, 21, 13, 15))
        );
        // Summer: UTC+2.
        assert_eq!(
            parse("1st Jul 2026 02:15pm", &berlin),
            Some(at(2026, 7, 1, 12, 15))
        );
    }

    proptest! {
        #[test]
        fn formatting_then_parsing_gives_the_same_minute(minutes in 0i64..(200 * 366 * 24 * 60)) {
            // Any minute from 1970 to about 2170.
            let seconds = minutes * 60;
            let text = reputation_simulate::date::api_date(seconds).unwrap();
            prop_assert_eq!(utc(&text), Some(seconds as f64), "{}", text);
        }
    }
}
