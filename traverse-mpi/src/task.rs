//! The unit of work that ranks hand out and steal: one directory to read,
//! or one share of a large directory's entries.

use crate::wire::{Reader, Writer};

/// A directory whose path is this long or longer is read with its whole
/// subtree by one task: its subdirectories' paths could pass `PATH_MAX`
/// (4 096 bytes), past which a path cannot be opened, while a walk opens
/// each directory relative to its parent. (Its own path, below 2 048 + 256
/// bytes, can be.)
pub const DEEP_PATH: usize = 2048;

/// A directory to read. Its own inode was counted by whoever listed it
/// (its parent's reader), except for the walk's root, which counts itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// The path as the library built it (the root's, then `/NAME` per level).
    pub path: Vec<u8>,
    /// Levels below the root (the root is 0).
    pub depth: u32,
    /// A large directory is read by several tasks, each of which stats and
    /// counts the entries whose name hashes to its `part` of `parts`.
    pub parts: u32,
    pub part: u32,
    /// The directory's own size and disk usage, as its parent's reader
    /// stat'ed it (`None`: the root, whose walk counts it).
    pub own: Option<(u64, u64)>,
    /// Read with its whole subtree (a path of [`DEEP_PATH`] bytes or more).
    pub deep: bool,
    /// Its place in du's order ([`crate::order::Chain`]; the root's is empty).
    pub chain: Vec<u128>,
}

impl Task {
    /// The root of a walk.
    pub fn root(path: Vec<u8>) -> Task {
        Task {
            deep: path.len() >= DEEP_PATH,
            path,
            depth: 0,
            parts: 1,
            part: 0,
            own: None,
            chain: Vec::new(),
        }
    }

    pub fn write(&self, w: &mut Writer) {
        w.bytes(&self.path);
        w.u32(self.depth);
        w.u32(self.parts);
        w.u32(self.part);
        w.u8(u8::from(self.deep));
        match self.own {
            None => w.u8(0),
            Some((bytes, disk)) => {
                w.u8(1);
                w.u64(bytes);
                w.u64(disk);
            }
        }
        w.keys(&self.chain);
    }

    pub fn read(r: &mut Reader<'_>) -> Task {
        let path = r.bytes().to_vec();
        let (depth, parts, part) = (r.u32(), r.u32(), r.u32());
        let deep = r.u8() == 1;
        let own = (r.u8() == 1).then(|| (r.u64(), r.u64()));
        let chain = r.keys();
        Task {
            path,
            depth,
            parts,
            part,
            own,
            deep,
            chain,
        }
    }
}

/// Several tasks in one message.
pub fn encode(tasks: &[Task]) -> Vec<u8> {
    let mut w = Writer::default();
    for t in tasks {
        t.write(&mut w);
    }
    w.0
}

pub fn decode(bytes: &[u8]) -> Vec<Task> {
    let mut r = Reader(bytes);
    let mut tasks = Vec::new();
    while !r.is_empty() {
        tasks.push(Task::read(&mut r));
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_cross_unchanged() {
        let tasks = vec![
            Task::root(b"/srv".to_vec()),
            Task {
                path: b"/srv/a\xff".to_vec(),
                depth: 1,
                parts: 8,
                part: 7,
                own: Some((4096, 8192)),
                deep: true,
                chain: vec![3, u128::MAX],
            },
        ];
        assert_eq!(decode(&encode(&tasks)), tasks);
        assert!(decode(&[]).is_empty());
    }
}
