//! What the training examples share besides the library: a progress bar for long loops and a
//! PNG plot of the curves they record. (A folder without a `main.rs`, so not an example.)

use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use std::path::Path;

/// A progress bar over `len` steps named `what`, on standard error; it draws nothing when
/// standard error is not a terminal (CI, a pipe, a file), so logs stay clean.
pub fn progress(len: usize, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({eta} left)")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    bar
}

/// One curve of a plot: its legend and its `(x, y)` points.
pub struct Curve<'a> {
    /// The legend.
    pub label: &'a str,
    /// The points, in order of `x`.
    pub points: &'a [(f64, f64)],
}

/// Writes a line plot of `curves` to the PNG file `path`: 800 × 500 pixels, `title` above,
/// axis labels `x` and `y`, a legend. The text is drawn with DejaVu Sans, embedded in the
/// program (no system fonts are needed).
pub fn plot(
    path: &Path,
    title: &str,
    [x, y]: [&str; 2],
    curves: &[Curve<'_>],
) -> Result<(), String> {
    const SIZE: (u32, u32) = (800, 500);
    // A second registration of the same font is harmless.
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| "the embedded font did not load".to_string())?;
    let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let all = curves.iter().flat_map(|c| c.points.iter());
        let (x0, x1) = all
            .clone()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.0), b.max(p.0))
            });
        let (y0, y1) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.1), b.max(p.1))
        });
        if !(x0.is_finite() && y0.is_finite()) {
            return Err("nothing to plot".into());
        }
        let pad = ((y1 - y0) * 0.05).max(1e-9);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 24))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1.max(x0 + 1.0), (y0 - pad)..(y1 + pad))
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(x)
            .y_desc(y)
            .label_style(("sans-serif", 14))
            // Whole numbers where the ticks fall on them (steps, epochs).
            .x_labels(((x1 - x0) as usize + 1).clamp(2, 10))
            .x_label_formatter(&|v| {
                if v.fract() == 0.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.1}")
                }
            })
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, c) in curves.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    c.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?
                .label(c.label)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut png = png::Encoder::new(std::io::BufWriter::new(file), SIZE.0, SIZE.1);
    png.set_color(png::ColorType::Rgb);
    png.set_depth(png::BitDepth::Eight);
    let mut writer = png.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&rgb).map_err(|e| e.to_string())
}
