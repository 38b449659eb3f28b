//! UI test: `Option` around a field the source type requires (P5: wrap exactly where the source does).

use informer_derive::Projection;
use informer_runtime::projection::IStr;
use k8s_openapi::api::core::v1::Container;

#[derive(Projection, Clone, Debug)]
#[projection(of = Container)]
pub struct ContainerView {
    pub name: Option<IStr>,
}

fn main() {}
