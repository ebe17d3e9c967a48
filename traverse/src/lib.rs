//! Directory tree totals (being written).
