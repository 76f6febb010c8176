// coevo view: draw every <div class="plot" data-figure="{...}"> with plotly.js (served or inlined).
//
// A figure's height is its layout's (rows x panel height): the div is given that height, since
// plotly's responsive mode sizes a plot from its box, and a box sized by its content shrank to
// its CSS min-height on a resize while the plot kept its height and covered the plots below.
// A small-multiples figure also carries `grid`: its layout for each column count (built by
// coevo/view/plots.py, widest first); the widest whose panels get `min_panel_px` each is drawn,
// and drawn again when a resize changes which one fits.
(function () {
  // Set "a.b[2].c" (Plotly.relayout's path syntax) in a layout object.
  function setPath(object, path, value) {
    var keys = path.replace(/\[(\d+)\]/g, ".$1").split(".");
    for (var i = 0; i < keys.length - 1; i++) {
      object = object[keys[i]] = object[keys[i]] || {};
    }
    object[keys[keys.length - 1]] = value;
  }

  // The grid layout that fits the div's width: [columns, updates], or null for a plain figure.
  function fitting(div, grid) {
    if (!grid || !grid.layouts || !grid.layouts.length) { return null; }
    var width = div.clientWidth;
    if (!width) { return grid.layouts[0]; }  // not shown yet (a closed <details>): as built
    for (var i = 0; i < grid.layouts.length; i++) {
      if (grid.layouts[i][0] * grid.min_panel_px <= width) { return grid.layouts[i]; }
    }
    return grid.layouts[grid.layouts.length - 1];
  }

  function draw() {
    if (typeof Plotly === "undefined") { return; }
    document.querySelectorAll("div.plot[data-figure]").forEach(function (div) {
      if (div.dataset.drawn) { return; }
      var fig = JSON.parse(div.dataset.figure);
      var chosen = fitting(div, fig.grid);
      div.coevoGrid = fig.grid;  // kept: a resize need not parse the figure again
      if (chosen) {
        Object.keys(chosen[1]).forEach(function (path) { setPath(fig.layout, path, chosen[1][path]); });
        div.dataset.columns = String(chosen[0]);
      }
      if (fig.layout.height) { div.style.height = fig.layout.height + "px"; }
      Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false});
      div.dataset.drawn = "1";
    });
  }

  function reflow() {
    document.querySelectorAll("div.plot[data-drawn]").forEach(function (div) {
      var chosen = fitting(div, div.coevoGrid);
      if (!chosen || div.dataset.columns === String(chosen[0])) { return; }
      div.dataset.columns = String(chosen[0]);
      div.style.height = chosen[1].height + "px";
      // A relayout that sets the height alone also freezes the width at its current value, and
      // plotly's responsive resize leaves a plot with both set alone: the width is let go here,
      // so the plot follows its box on every later resize.
      Plotly.relayout(div, Object.assign({width: null}, chosen[1])).then(function () {
        if (div.clientWidth) { Plotly.Plots.resize(div); }
      });
    });
  }

  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(reflow, 150);
  });

  // A plot inside a closed <details> was drawn at plotly's default width (its box had none):
  // opening the fold lays it out for the width it now has. `toggle` does not bubble, hence
  // the capture.
  document.addEventListener("toggle", function (event) {
    var fold = event.target;
    if (!fold.open || typeof Plotly === "undefined") { return; }
    reflow();
    fold.querySelectorAll("div.plot[data-drawn]").forEach(function (div) {
      if (div.clientWidth) { Plotly.Plots.resize(div); }
    });
  }, true);
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", draw); } else { draw(); }
})();
