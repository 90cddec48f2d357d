//! The panel's "Headset" section: where a headset opens the page (the URL per address, with a
//! QR code to scan from the headset's browser), the `adb reverse` line for a Quest on USB, the
//! pairing key and the certificate's fingerprint (what the browser shows when asked to accept).

use bevy_egui::egui;

use crate::protocol::xr::XrInfo;

/// Widget state: which of the URLs the QR code shows.
#[derive(Default)]
pub struct HeadsetState {
    pub selected: usize,
    /// The QR modules of the URL last drawn (dark = true), and its width.
    qr: Option<(String, Vec<bool>, usize)>,
}

pub fn section(ui: &mut egui::Ui, info: &XrInfo, state: &mut HeadsetState) {
    if info.urls.is_empty() {
        ui.small("no address to open the page on");
        return;
    }
    state.selected = state.selected.min(info.urls.len() - 1);
    for (i, url) in info.urls.iter().enumerate() {
        ui.radio_value(
            &mut state.selected,
            i,
            egui::RichText::new(url).small().monospace(),
        );
    }
    if !crate::protocol::net::exposed(info.addr) {
        ui.small("loopback only: start armsim with --bind 0.0.0.0 for a headset on Wi-Fi (it opens the page, nothing else)");
    }
    let url = &info.urls[state.selected];
    if state.qr.as_ref().is_none_or(|(u, _, _)| u != url) {
        state.qr = qrcode::QrCode::new(url.as_bytes()).ok().map(|code| {
            let dark = code
                .to_colors()
                .into_iter()
                .map(|c| c == qrcode::Color::Dark)
                .collect();
            (url.clone(), dark, code.width())
        });
    }
    if let Some((_, modules, width)) = &state.qr {
        draw_qr(ui, modules, *width);
    }
    ui.small("Quest over USB (no certificate prompt):");
    ui.label(egui::RichText::new(&info.adb).small().monospace());
    ui.small(format!(
        "then https://localhost:{}/?key={}",
        info.addr.port(),
        info.key
    ));
    ui.small(format!("certificate SHA-256: {}", info.fingerprint))
        .on_hover_text("what the headset's browser shows when it asks to accept the certificate");
}

/// A QR code as black squares on a white field with the standard 4-module quiet zone.
fn draw_qr(ui: &mut egui::Ui, modules: &[bool], width: usize) {
    let quiet = 4;
    let cells = width + 2 * quiet;
    let module = (ui.available_width().min(240.0) / cells as f32)
        .floor()
        .max(2.0);
    let side = module * cells as f32;
    let (rect, _) = ui.allocate_exact_size(egui::vec2(side, side), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 0.0, egui::Color32::WHITE);
    for (i, dark) in modules.iter().enumerate() {
        if !dark {
            continue;
        }
        let (x, y) = ((i % width + quiet) as f32, (i / width + quiet) as f32);
        let min = rect.min + egui::vec2(x * module, y * module);
        painter.rect_filled(
            egui::Rect::from_min_size(min, egui::vec2(module, module)),
            0.0,
            egui::Color32::BLACK,
        );
    }
}
