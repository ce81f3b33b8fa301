//! A map from row id to value backed by a vector: row ids are dense (AUTOINCREMENT), and the
//! hot loops of search (a lookup per posting or per HNSW candidate) cannot afford hashing.

pub struct DenseMap<T> {
    slots: Vec<Option<T>>,
    len: usize,
}

impl<T> Default for DenseMap<T> {
    fn default() -> Self {
        DenseMap {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<T> DenseMap<T> {
    #[inline]
    pub fn get(&self, key: u64) -> Option<&T> {
        self.slots.get(key as usize).and_then(Option::as_ref)
    }

    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: u64, value: T) -> Option<T> {
        let i = key as usize;
        if i >= self.slots.len() {
            self.slots.resize_with((i + 1).next_power_of_two(), || None);
        }
        let old = self.slots[i].replace(value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub fn remove(&mut self, key: u64) -> Option<T> {
        let old = self.slots.get_mut(key as usize).and_then(Option::take);
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k as u64, v)))
    }

    /// Bytes of the slot vector (values' own heap allocations not included).
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Option<T>>()
    }

    /// Slots allocated (one past the highest key the map has room for).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_remove_and_len() {
        let mut m = DenseMap::default();
        assert_eq!(m.insert(5, "a"), None);
        assert_eq!(m.insert(5, "b"), Some("a"));
        assert_eq!(m.len(), 1);
        assert_eq!(m.get(5), Some(&"b"));
        assert_eq!(m.get(4), None);
        assert_eq!(m.get(1 << 40), None);
        assert_eq!(m.remove(5), Some("b"));
        assert_eq!(m.remove(5), None);
        assert_eq!(m.len(), 0);
    }
}
