//! The conversions between compact and k8s-openapi values (P2), one generic impl per field shape.
//!
//! A generated compact struct converts field by field; each field is one call,
//! `FromFull::from_full(&full.field)` or `ToFull::to_full(&compact.field)`, and the field's two
//! types pick the impls below (an `Option` of a list of shared structs goes through the `Option`,
//! `Box<[_]>` and [`Shared`] impls down to the struct's own). Generated code thereby carries no
//! closure or iterator chain per field for the compiler to check: the bodies here are checked
//! once (decision record 26, "What it costs"). The values are the same as those of the `From`
//! impls users call, which delegate here.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{CMap, IStr, Share, Shared, StrMap};

/// `Self` from a reference to the k8s-openapi value `F` (the compact side of P2).
pub trait FromFull<F: ?Sized> {
    /// The compact value of `full`.
    fn from_full(full: &F) -> Self;
}

/// The k8s-openapi value `F` from a reference to the compact `Self` (the full side of P2).
pub trait ToFull<F> {
    /// The full value of `self`.
    fn to_full(&self) -> F;
}

/// Copied both ways: the same type on both sides.
macro_rules! same {
    ($($t:ty),*) => {$(
        impl FromFull<$t> for $t {
            #[inline]
            fn from_full(full: &$t) -> Self {
                *full
            }
        }
        impl ToFull<$t> for $t {
            #[inline]
            fn to_full(&self) -> $t {
                *self
            }
        }
    )*};
}
same!(bool, i32, i64, f64);

impl FromFull<String> for IStr {
    #[inline]
    fn from_full(full: &String) -> Self {
        IStr::new(full)
    }
}

impl ToFull<String> for IStr {
    #[inline]
    fn to_full(&self) -> String {
        String::from(self.as_str())
    }
}

impl FromFull<Quantity> for IStr {
    #[inline]
    fn from_full(full: &Quantity) -> Self {
        IStr::new(&full.0)
    }
}

impl ToFull<Quantity> for IStr {
    #[inline]
    fn to_full(&self) -> Quantity {
        Quantity(String::from(self.as_str()))
    }
}

impl<F, C: FromFull<F>> FromFull<Option<F>> for Option<C> {
    #[inline]
    fn from_full(full: &Option<F>) -> Self {
        full.as_ref().map(C::from_full)
    }
}

impl<F, C: ToFull<F>> ToFull<Option<F>> for Option<C> {
    #[inline]
    fn to_full(&self) -> Option<F> {
        self.as_ref().map(C::to_full)
    }
}

/// A large optional struct, boxed so that it costs 8 bytes while absent.
impl<F, C: FromFull<F>> FromFull<F> for Box<C> {
    #[inline]
    fn from_full(full: &F) -> Self {
        Box::new(C::from_full(full))
    }
}

impl<F, C: ToFull<F>> ToFull<F> for Box<C> {
    #[inline]
    fn to_full(&self) -> F {
        C::to_full(self)
    }
}

/// A list, exactly sized.
impl<F, C: FromFull<F>> FromFull<Vec<F>> for Box<[C]> {
    fn from_full(full: &Vec<F>) -> Self {
        full.iter().map(C::from_full).collect()
    }
}

impl<F, C: ToFull<F>> ToFull<Vec<F>> for Box<[C]> {
    fn to_full(&self) -> Vec<F> {
        self.iter().map(C::to_full).collect()
    }
}

/// A part that equal parts of all objects share (P7).
impl<F, C: FromFull<F> + Share> FromFull<F> for Shared<C> {
    #[inline]
    fn from_full(full: &F) -> Self {
        Shared::new(C::from_full(full))
    }
}

impl<F, C: ToFull<F>> ToFull<F> for Shared<C> {
    #[inline]
    fn to_full(&self) -> F {
        C::to_full(self)
    }
}

impl FromFull<BTreeMap<String, String>> for StrMap {
    fn from_full(full: &BTreeMap<String, String>) -> Self {
        full.iter().collect()
    }
}

impl ToFull<BTreeMap<String, String>> for StrMap {
    fn to_full(&self) -> BTreeMap<String, String> {
        self.to_btree_map()
    }
}

/// Quantities by name (`resources.limits`), held as their strings.
impl FromFull<BTreeMap<String, Quantity>> for StrMap {
    fn from_full(full: &BTreeMap<String, Quantity>) -> Self {
        full.iter().map(|(k, v)| (k, &v.0)).collect()
    }
}

impl ToFull<BTreeMap<String, Quantity>> for StrMap {
    fn to_full(&self) -> BTreeMap<String, Quantity> {
        self.iter()
            .map(|(k, v)| (String::from(k), Quantity(String::from(v))))
            .collect()
    }
}

impl<F, C: FromFull<F>> FromFull<BTreeMap<String, F>> for CMap<C> {
    fn from_full(full: &BTreeMap<String, F>) -> Self {
        full.iter().map(|(k, v)| (k, C::from_full(v))).collect()
    }
}

impl<F, C: ToFull<F>> ToFull<BTreeMap<String, F>> for CMap<C> {
    fn to_full(&self) -> BTreeMap<String, F> {
        self.iter()
            .map(|(k, v)| (String::from(k), v.to_full()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_shapes_round_trip() {
        let full: Option<Vec<String>> = Some(vec!["a".into(), "b".into()]);
        let compact: Option<Box<[IStr]>> = FromFull::from_full(&full);
        assert_eq!(
            compact
                .as_deref()
                .map(|l| l.iter().map(IStr::as_str).collect::<Vec<_>>()),
            Some(vec!["a", "b"])
        );
        let back: Option<Vec<String>> = compact.to_full();
        assert_eq!(back, full);

        let none: Option<Vec<String>> = None;
        let compact: Option<Box<[IStr]>> = FromFull::from_full(&none);
        assert!(compact.is_none());
    }

    #[test]
    fn maps_and_quantities_round_trip() {
        let labels = BTreeMap::from([
            ("b".to_owned(), "2".to_owned()),
            ("a".to_owned(), "1".to_owned()),
        ]);
        let compact = StrMap::from_full(&labels);
        assert_eq!(compact, labels);
        assert_eq!(
            ToFull::<BTreeMap<String, String>>::to_full(&compact),
            labels
        );

        let limits = BTreeMap::from([("cpu".to_owned(), Quantity("250m".to_owned()))]);
        let compact: StrMap = FromFull::from_full(&limits);
        assert_eq!(compact.get("cpu"), Some("250m"));
        let back: BTreeMap<String, Quantity> = compact.to_full();
        assert_eq!(back, limits);

        let lists = BTreeMap::from([("k".to_owned(), vec!["a".to_owned()])]);
        let compact: CMap<Box<[IStr]>> = FromFull::from_full(&lists);
        assert_eq!(compact.get("k").map(|l| l.len()), Some(1));
        let back: BTreeMap<String, Vec<String>> = compact.to_full();
        assert_eq!(back, lists);
    }

    #[test]
    fn copies_and_boxes() {
        let n: Option<Box<[i64]>> = FromFull::from_full(&Some(vec![1_i64, -2]));
        assert_eq!(n.as_deref(), Some(&[1_i64, -2][..]));
        let b: Box<IStr> = FromFull::from_full(&"x".to_owned());
        assert_eq!(ToFull::<String>::to_full(&b), "x");
    }
}
