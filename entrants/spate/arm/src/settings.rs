//! What the arm reads from its environment besides spate's own pipeline
//! file: the transform's parameters, which are the workload's, not spate's.

use crate::rows::Transform;

/// The variable naming the unit whose readings are dropped.
pub const DROP_UNIT: &str = "SPATEC_DROP_UNIT";
/// The variable holding the quality floor.
pub const QUALITY_FLOOR: &str = "SPATEC_QUALITY_FLOOR";

/// Reads the transform's parameters through `var` (the process
/// environment, or a test's map). Both must be set: a default here would be
/// a second copy of the workload's definition, free to drift from it.
pub fn transform(var: impl Fn(&str) -> Option<String>) -> Result<Transform, String> {
    let need = |name: &str| {
        var(name).filter(|v| !v.is_empty()).ok_or_else(|| {
            format!("{name} is not set; the plan sets it from the workload's transform")
        })
    };
    let drop_unit = need(DROP_UNIT)?;
    let floor = need(QUALITY_FLOOR)?;
    let quality_floor = floor
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .ok_or_else(|| format!("{QUALITY_FLOOR}={floor:?} is not a number, such as 0.2"))?;
    Ok(Transform {
        drop_unit,
        quality_floor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_parameters_are_required() {
        let err = transform(|k| (k == DROP_UNIT).then(|| "drop".into())).unwrap_err();
        assert_eq!(
            err,
            "SPATEC_QUALITY_FLOOR is not set; the plan sets it from the workload's transform"
        );
        let err =
            transform(|k| Some(if k == DROP_UNIT { "drop" } else { "low" }.into())).unwrap_err();
        assert_eq!(
            err,
            "SPATEC_QUALITY_FLOOR=\"low\" is not a number, such as 0.2"
        );
        let t = transform(|k| Some(if k == DROP_UNIT { "drop" } else { "0.2" }.into())).unwrap();
        assert_eq!(t.quality_floor, 0.2);
    }
}
