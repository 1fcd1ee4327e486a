//! Prometheus text 0.0.4 from the OpenMetrics that `prometheus-client` writes for the
//! exporter's own families.
//!
//! The sample lines are the same in both formats for the types the registry holds (no
//! exemplars, no `_created`, no units); only the family headers differ: 0.0.4 names a counter
//! family `..._total` and an info family `..._info`, writes info as a gauge, and has no
//! `# EOF`.

/// Rewrites an OpenMetrics exposition (with or without `# EOF`) as Prometheus text 0.0.4.
pub fn convert(openmetrics: &str, out: &mut Vec<u8>) {
    let mut help: Option<&str> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            // Held until the TYPE line says what the family's 0.0.4 name is.
            help = Some(rest);
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let (suffix, kind) = match kind {
                "counter" => ("_total", "counter"),
                "info" => ("_info", "gauge"),
                "stateset" => ("", "gauge"),
                "gauge" | "histogram" | "summary" => ("", kind),
                _ => ("", "untyped"),
            };
            if let Some(help) = help.take() {
                let text = help.split_once(' ').map_or("", |(_, text)| text);
                push_line(out, &["# HELP ", name, suffix, " ", text]);
            }
            push_line(out, &["# TYPE ", name, suffix, " ", kind]);
            continue;
        }
        push_line(out, &[line]);
    }
}

fn push_line(out: &mut Vec<u8>, parts: &[&str]) {
    for part in parts {
        out.extend_from_slice(part.as_bytes());
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_and_info_families_take_their_sample_names_and_eof_goes() {
        let openmetrics = "# HELP x_requests Requests.\n# TYPE x_requests counter\n\
             x_requests_total{code=\"200\"} 3\n# HELP x_build Build.\n# TYPE x_build info\n\
             x_build_info{version=\"1\"} 1\n# HELP x_up Up.\n# TYPE x_up gauge\nx_up 1\n# EOF\n";
        let mut out = Vec::new();
        convert(openmetrics, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# HELP x_requests_total Requests.\n# TYPE x_requests_total counter\n\
             x_requests_total{code=\"200\"} 3\n# HELP x_build_info Build.\n\
             # TYPE x_build_info gauge\nx_build_info{version=\"1\"} 1\n# HELP x_up Up.\n\
             # TYPE x_up gauge\nx_up 1\n"
        );
    }
}
