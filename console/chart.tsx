// One chart of the overview, drawn by uPlot on a canvas. The canvas is an image with a name
// (role="img", aria-label); its numbers are in the table the screen puts after it, which is what a
// screen reader reads and what an operator copies. uPlot sets its elements' styles through the CSSOM
// (element.style), which the console's CSP allows; its stylesheet is bundled into the console's.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatTimes } from './format.ts';

export interface ChartSeries {
  label: string;
  /** A color with at least 3:1 contrast against the white background (WCAG 1.4.11). */
  color: string;
  kind: 'bars' | 'line';
  values: Array<number | null>;
  dash?: boolean;
}

export interface ChartProps {
  /** The canvas's accessible name: what it shows, and that the table after it has the numbers. */
  label: string;
  /** Seconds since the epoch (a time axis, shown in Caracas time), or 0..n-1 with `categories`. */
  x: number[];
  categories?: string[];
  /**
   * Drawn in this order, each over the ones before: a stacked bar is given as running totals, the
   * tallest first.
   */
  series: ChartSeries[];
  yFormat?: (value: number) => string;
  /** Width of the value axis, in pixels (amounts need more than counts). */
  ySize?: number;
  /** Counts: ticks at whole numbers only. */
  integers?: boolean;
  /** A fixed value range (a rate is 0..100). */
  yRange?: [number, number];
  /** A click on the plot: the index of the bar or bucket under the pointer, and the value there. */
  onPick?: (index: number, value: number) => void;
}

const AXIS = { stroke: '#1b1f24', grid: { stroke: '#d8dee4', width: 1 }, ticks: { stroke: '#d8dee4', width: 1 } };
const HEIGHT = 220;
/** Tick steps of a count axis: 1, 2, 5, 10, 20, 50… (no 0.25 of a payment). */
const COUNT_STEPS = [1, 2, 5]
  .flatMap((step) => [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000].map((scale) => step * scale))
  .sort((a, b) => a - b);

function seriesOptions(series: ChartSeries, bars: uPlot.Series.PathBuilder): uPlot.Series {
  return {
    label: series.label,
    stroke: series.color,
    fill: series.kind === 'bars' ? series.color : undefined,
    width: series.kind === 'bars' ? 0 : 2,
    dash: series.dash ? [6, 4] : undefined,
    paths: series.kind === 'bars' ? bars : undefined,
    points: { show: series.kind === 'line', size: 5 },
  };
}

function chartOptions(props: ChartProps, width: number): uPlot.Options {
  const { categories, yFormat } = props;
  const count = props.x.length;
  const bars = uPlot.paths.bars!({ size: [0.75, 48], align: 0 });
  return {
    width,
    height: HEIGHT,
    legend: { show: false },
    cursor: { points: { show: false }, drag: { x: false, y: false } },
    tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'America/Caracas'),
    scales: {
      x: categories
        ? { time: false, range: [-0.5, Math.max(count, 1) - 0.5] }
        : { time: true, range: (_u, min, max) => timeRange(props.x, min, max) },
      y: { range: props.yRange ?? ((_u, _min, max) => [0, max > 0 ? max * 1.1 : 1]) },
    },
    axes: [
      {
        ...AXIS,
        ...(categories
          ? {
              splits: () => categories.map((_, i) => i),
              values: (_u: uPlot, splits: number[]) => splits.map((i) => categories[i] ?? ''),
            }
          : { values: caracasTicks }),
      },
      {
        ...AXIS,
        size: props.ySize ?? 56,
        ...(props.integers ? { incrs: COUNT_STEPS } : {}),
        ...(yFormat ? { values: (_u: uPlot, splits: number[]) => splits.map(yFormat) } : {}),
      },
    ],
    series: [{}, ...props.series.map((s) => seriesOptions(s, bars))],
  };
}

/**
 * Time ticks in Caracas time as the console writes it (24-hour clock, year-month-day): "14:00", the
 * date where a day starts or on the first tick, only the date when ticks are a day or more apart.
 */
function caracasTicks(_u: uPlot, splits: number[], _axis: number, _space: number, increment: number): string[] {
  return splits.map((seconds, i) => {
    const caracas = formatTimes(new Date(seconds * 1000).toISOString())?.caracas ?? '';
    const [day = '', time = ''] = caracas.split(' ');
    if (increment >= 86_400) return day.slice(5);
    const clock = time.slice(0, 5);
    return i === 0 || clock === '00:00' ? `${day.slice(5)} ${clock}` : clock;
  });
}

/** Half a bucket of room on each side, so that the first and last bars are drawn whole. */
function timeRange(x: number[], min: number | null, max: number | null): uPlot.Range.MinMax {
  const step = x.length > 1 ? x[1]! - x[0]! : 3600;
  return [(min ?? 0) - step / 2, (max ?? 0) + step / 2];
}

export function Chart(props: ChartProps) {
  const holder = useRef<HTMLDivElement>(null);
  const pick = useRef(props.onPick);
  pick.current = props.onPick;
  useEffect(() => {
    const element = holder.current;
    if (!element) return;
    const data: uPlot.AlignedData = [props.x, ...props.series.map((s) => s.values)];
    const plot = new uPlot(chartOptions(props, Math.max(element.clientWidth, 320)), data, element);
    plot.ctx.canvas.setAttribute('role', 'img');
    plot.ctx.canvas.setAttribute('aria-label', props.label);
    // uPlot keeps the index under the pointer (cursor.idx) up to date as it moves: a click reads it.
    plot.over.addEventListener('click', () => {
      const index = plot.cursor.idx;
      const top = plot.cursor.top;
      if (index === null || index === undefined || top === undefined || top < 0) return;
      pick.current?.(index, plot.posToVal(top, 'y'));
    });
    return () => plot.destroy();
  }, [props]);
  return <div ref={holder} class={props.onPick ? 'chart pickable' : 'chart'} />;
}
