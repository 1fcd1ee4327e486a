// The few Grafana helpers the dashboard needs (no grafonnet): every panel and query on the
// dashboard's data source variable, queries lettered in order.
{
  datasource: { type: 'prometheus', uid: '${datasource}' },

  grid(x, y, w, h): { x: x, y: y, w: w, h: h },

  // A PromQL query of a panel; `instant` for stats, bar gauges and tables.
  target(expr, legend=null, instant=false, format=null):
    { datasource: $.datasource, expr: expr }
    + (if legend != null then { legendFormat: legend } else {})
    + (if instant then { instant: true } else {})
    + (if format != null then { format: format } else {}),

  panel(id, type, title, grid, targets, extra={}): {
    id: id,
    type: type,
    title: title,
    datasource: $.datasource,
    gridPos: grid,
    targets: [
      targets[i] { refId: std.char(std.codepoint('A') + i) }
      for i in std.range(0, std.length(targets) - 1)
    ],
  } + extra,

  row(id, title, y): {
    id: id,
    type: 'row',
    title: title,
    collapsed: false,
    gridPos: $.grid(0, y, 24, 1),
    panels: [],
  },

  // Colour steps from the lowest up: [[colour, from], ...], the first from null.
  thresholds(steps): {
    mode: 'absolute',
    steps: [{ color: s[0], value: s[1] } for s in steps],
  },

  // A variable whose values come from a label_values() query, all selected by default.
  variable(name, label, query): {
    name: name,
    label: label,
    type: 'query',
    datasource: $.datasource,
    query: { query: query, refId: name + '-var' },
    definition: query,
    refresh: 2,
    includeAll: true,
    multi: true,
    allValue: '.*',
    current: { selected: true, text: ['All'], value: ['$__all'] },
    sort: 1,
  },
}
