// coevo view: draw every <div class="plot" data-figure="{...}"> with plotly.js (served or inlined).
(function () {
  function draw() {
    if (typeof Plotly === "undefined") { return; }
    document.querySelectorAll("div.plot[data-figure]").forEach(function (div) {
      if (div.dataset.drawn) { return; }
      var fig = JSON.parse(div.dataset.figure);
      Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false});
      div.dataset.drawn = "1";
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", draw); } else { draw(); }
})();
