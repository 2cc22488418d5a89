import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  values: number[];
  color: string;
}

/** A uPlot line chart over days (x: Unix seconds); its figures are also in the table beside it. */
export function LineChart({ title, x, series }: { title: string; x: number[]; series: Series[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current) return;
    const plot = new uPlot(
      {
        title,
        width: Math.max(320, Math.min(900, box.current.clientWidth || 640)),
        height: 240,
        scales: { x: { time: true } },
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: true } }))],
        // Small values (costs of a few micro-dollars) keep their significant digits on the axis.
        axes: [{}, { size: 80, values: (_plot, splits) => splits.map((v) => (v === 0 || Math.abs(v) >= 1 ? String(v) : v.toPrecision(2))) }],
      },
      [x, ...series.map((s) => s.values)],
      box.current,
    );
    return () => plot.destroy();
  }, [title, x, series]);
  return <figure class="chart" ref={box} aria-label={title} />;
}
