//! The model's incremental updates against a full rebuild, and where the
//! selection goes.

use super::*;

/// A directory named `name` holding one file of `size` bytes, as a saved
/// scan gives it.
fn dir(name: &str, size: u64) -> NcduDir {
    let text = format!(
        "[1,2,{{}},[{{\"name\":\"{name}\",\"asize\":0,\"dsize\":0,\"ino\":1,\"dev\":1}},\
         {{\"name\":\"f\",\"asize\":{size},\"dsize\":{},\"ino\":2}}]]",
        size / 2 * 4096
    );
    NcduDir::read_export(text.as_bytes()).unwrap()
}

fn names(m: &Model) -> Vec<String> {
    m.rows
        .iter()
        .map(|r| String::from_utf8_lossy(&r.name).into_owned())
        .collect()
}

/// Directories arriving in batches of every size, under every order,
/// filter and selection, give exactly the rows of a full rebuild, and a
/// chosen selection stays on its row.
#[test]
fn incremental_rows_equal_a_full_rebuild() {
    let sizes: Vec<u64> = (0..700u64).map(|i| (i * 7919) % 97).collect();
    for (key, reverse) in [
        (Key::Size, false),
        (Key::Size, true),
        (Key::Name, false),
        (Key::Count, true),
    ] {
        for (hide, filter) in [(false, None), (true, Some("1"))] {
            let mut m = Model::new(Path::new("/r"), true);
            m.sort = Sort { key, reverse };
            m.hide_hidden = hide;
            m.filter = filter.map(str::to_owned);
            let mut at = 0;
            for batch in [1, 2, 1, 9, 40, 3, 100, 1, 300, 243] {
                let dirs: Vec<NcduDir> = (at..at + batch)
                    .map(|i| {
                        let hidden = if i % 5 == 0 { "." } else { "" };
                        dir(&format!("{hidden}d{i}"), sizes[i])
                    })
                    .collect();
                at += batch;
                if at > 20 {
                    // The person moved: the selection follows its row.
                    m.down(3);
                }
                let selected = m.selected_row().map(|r| r.name.clone());
                m.early_dirs(dirs);
                let incremental = m.rows.clone();
                if at > 20 {
                    assert_eq!(m.selected_row().map(|r| r.name.clone()), selected);
                }
                m.refresh();
                assert_eq!(incremental, m.rows, "{key:?} {reverse} after {at}");
            }
            assert_eq!(at, sizes.len());
            let sum: u128 = m.rows.iter().map(|r| r.disk).sum();
            if filter.is_none() && !hide {
                assert_eq!(m.totals().disk_bytes, sum);
            }
        }
    }
}

/// After deleting the selected row, the next one is selected (not the
/// first), and the totals drop by what went.
#[test]
fn deleting_keeps_the_selection_on_the_next_row() {
    let mut m = Model::new(Path::new("/r"), false);
    let mut root =
        b"[1,2,{},[{\"name\":\"/r\",\"asize\":0,\"dsize\":0,\"ino\":1,\"dev\":1}".to_vec();
    for (name, size) in [("a", 50), ("b", 40), ("c", 30), ("d", 20)] {
        root.extend_from_slice(
            format!(",{{\"name\":\"{name}\",\"asize\":{size},\"dsize\":0,\"ino\":{size}}}")
                .as_bytes(),
        );
    }
    root.extend_from_slice(b"]]");
    m.imported(NcduDir::read_export(&root).unwrap());
    assert_eq!(names(&m), ["a", "b", "c", "d"]);
    m.down(1);
    let b = m.chosen_rows();
    m.remove(&b);
    assert_eq!(names(&m), ["a", "c", "d"]);
    assert_eq!(m.selected_row().unwrap().name, b"c");
    assert_eq!(m.totals().bytes, 100);
    // Marked rows, the selection among them: the next row not deleted.
    m.toggle_mark();
    m.up(2);
    m.toggle_mark();
    let marked = m.chosen_rows();
    assert_eq!(marked.len(), 2);
    m.remove(&marked);
    assert_eq!(names(&m), ["d"]);
    assert_eq!(m.selected_row().unwrap().name, b"d");
    assert_eq!(m.totals().bytes, 20);
    assert!(m.marks.is_empty());
}
