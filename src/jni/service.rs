//! The native methods behind `io.zooid.IDGeneratorService`: open, close, create a category, take,
//! push and inspect, each a direct call of [`IdGeneratorService`].
//!
//! A service crosses to Java as a handle ([`super::handle`]), its options as the
//! `IDGeneratorOptions` object ([`super::options`]); ranges cross as one `long[]` of start/end
//! pairs.

use jni::objects::{JClass, JLongArray, JObject, JString};
use jni::sys::{jint, jlong};
use jni::{native_method, Env, NativeMethod};

use super::arrays::{long, long_array, ranges_to_java};
use super::convert::{optional_string_arg, ranges_from_java, string_arg};
use super::errors::{Failure, ThrowJava, ThrowUnchecked};
use super::handle::{self, into_handle};
use super::options::service_options;
use super::undelivered;
use crate::alloc::{CategorySpec, Layout, Migrated};
use crate::blocking::IdGeneratorService;
use crate::error::ZooidError;
use crate::idset::{IdCategory, IdSet};
use crate::marshal::layout as layout_of;

pub(super) const METHODS: &[NativeMethod] = &[
    native_method! {
        static fn open(connect: JString, options: io.zooid.IDGeneratorOptions) -> jlong,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn close(handle: jlong),
        error_policy = ThrowUnchecked,
    },
    native_method! {
        static fn create_category(
            handle: jlong,
            category: JString,
            first: jlong,
            last: jlong,
            layout: jint,
            unit: jlong,
            ceiling: jlong,
            acl: JString
        ),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn migrate_category(
            handle: jlong,
            category: JString,
            layout: jint,
            unit: jlong
        ) -> jlong[],
        error_policy = ThrowJava,
    },
    native_method! {
        static fn take_ids(handle: jlong, category: JString, count: jint) -> jlong[],
        error_policy = ThrowJava,
    },
    native_method! {
        static fn push_ids(
            handle: jlong,
            category: JString,
            origin: JString,
            ranges: jlong[],
            kept: jlong[]
        ),
        error_policy = ThrowJava,
    },
    native_method! {
        static fn origin(handle: jlong) -> JString,
        error_policy = ThrowJava,
    },
    native_method! {
        static fn pool_info(handle: jlong, category: JString) -> jlong[],
        error_policy = ThrowJava,
    },
];

fn open<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    connect: JString<'local>,
    options: JObject<'local>,
) -> Result<jlong, Failure> {
    let connect = string_arg(env, &connect, "connect")?;
    let (connect_options, options) = service_options(env, &options)?;
    let service = IdGeneratorService::connect(&connect, &connect_options, options)?;
    Ok(into_handle(service))
}

/// The service behind a handle, for the recipes' methods that open on it.
pub(super) fn service<'a>(handle: jlong) -> Result<&'a IdGeneratorService, Failure> {
    handle::get(handle)
}

fn close<'local>(
    _env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<(), Failure> {
    handle::free::<IdGeneratorService>(handle);
    Ok(())
}

fn category_arg(env: &Env<'_>, category: &JString<'_>) -> Result<IdCategory, Failure> {
    Ok(IdCategory::new(string_arg(env, category, "category")?)?)
}

/// The arguments are the fields of an `io.zooid.CategorySpec`: its layout number (0: the
/// store's default) and block size, its ceiling (negative: none) and its ACL text (null: none).
#[allow(clippy::too_many_arguments)]
fn create_category<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
    first: jlong,
    last: jlong,
    layout: jint,
    unit: jlong,
    ceiling: jlong,
    acl: JString<'local>,
) -> Result<(), Failure> {
    let category = category_arg(env, &category)?;
    let mut spec = CategorySpec::new(first, last);
    if let Some(layout) = layout_arg(layout, unit)? {
        spec = spec.layout(layout);
    }
    if ceiling >= 0 {
        spec = spec.ceiling(ceiling);
    }
    if let Some(acl) = optional_string_arg(env, &acl)? {
        spec = spec.acl(crate::zk::parse_acl_list(&acl)?);
    }
    Ok(service(handle)?.create_category(&category, &spec)?)
}

/// A layout number of `io.zooid.Layout` (0: the store's default) and its block size.
fn layout_arg(layout: jint, unit: jlong) -> Result<Option<Layout>, Failure> {
    let (number, unit) = layout_numbers(layout, unit)?;
    Ok(layout_of(number, unit)?)
}

/// A layout number and a block size from Java, as `marshal` takes them.
fn layout_numbers(layout: jint, unit: jlong) -> Result<(u32, u64), Failure> {
    let number = u32::try_from(layout)
        .map_err(|_| ZooidError::InvalidArgument(format!("layout {layout} is not a layout")))?;
    let unit = u64::try_from(unit).map_err(|_| {
        ZooidError::InvalidArgument(format!("block size {unit}: need 0..=2147483647"))
    })?;
    Ok((number, unit))
}

fn migrate_category<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
    layout: jint,
    unit: jlong,
) -> Result<JLongArray<'local>, Failure> {
    let category = category_arg(env, &category)?;
    let (number, unit) = layout_numbers(layout, unit)?;
    let layout = crate::marshal::migration_target(number, unit)?;
    // Read by io.zooid.Migration: moved (0/1), format before, format after, base (0 unless
    // moved).
    let values = match service(handle)?.migrate_category(&category, layout)? {
        Migrated::Already { format } => [0, i64::from(format), i64::from(format), 0],
        Migrated::Moved { from, to, base } => [1, i64::from(from), i64::from(to), base],
    };
    Ok(long_array(env, &values)?)
}

fn take_ids<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
    count: jint,
) -> Result<JLongArray<'local>, Failure> {
    let category = category_arg(env, &category)?;
    let count = u64::try_from(count)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            ZooidError::InvalidArgument(format!("take of {count} IDs: ask for at least 1"))
        })?;
    let service = service(handle)?;
    let ids = service.take_ids(&category, count)?;
    ranges_to_java(env, &ids.ranges()).map_err(|err| {
        Failure::Undelivered(Box::new(undelivered::give_back(env, service, ids, err)))
    })
}

/// A push of `ranges`. When it fails with nothing written (the core gave the set its IDs back),
/// `kept[0]` is set to 1 before the exception is built: Java keeps its IDs on that word alone,
/// which needs no allocation here, so it holds when building the exception fails (a full heap).
fn push_ids<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
    origin: JString<'local>,
    ranges: JLongArray<'local>,
    kept: JLongArray<'local>,
) -> Result<(), Failure> {
    if kept.is_null() {
        return Err(Failure::NullArgument("kept".into()));
    }
    let prepared = category_arg(env, &category).and_then(|category| {
        let origin = optional_string_arg(env, &origin)?;
        let ranges = ranges_from_java(env, &ranges)?;
        Ok((category, origin, ranges, service(handle)?))
    });
    let (category, origin, ranges, service) = match prepared {
        Ok(prepared) => prepared,
        // Nothing was sent: the set keeps its IDs. Unless a JNI call failed with its exception
        // pending (then no JNI call may follow): the set is dropped, its IDs leaked, never
        // handed out twice.
        Err(failure) => {
            if !env.exception_check() {
                kept.set_region(env, 0, &[1])?;
            }
            return Err(failure);
        }
    };
    // The set names the store it was taken from: a push through a service on another is refused.
    let mut ids = IdSet::taken_from(category, ranges, origin.map(Into::into));
    let pushed = service.push_ids(&mut ids);
    if pushed.is_err() && ids.has_more_ids() {
        kept.set_region(env, 0, &[1])?;
    }
    Ok(pushed?)
}

/// The store the service's IDs come from (null when it cannot say), kept by each Java `IDSet`
/// it takes and passed back with its push.
fn origin<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> Result<JString<'local>, Failure> {
    Ok(match service(handle)?.origin() {
        Some(origin) => JString::from_str(env, &*origin)?,
        None => JString::null(),
    })
}

fn pool_info<'local>(
    env: &mut Env<'local>,
    _class: JClass<'local>,
    handle: jlong,
    category: JString<'local>,
) -> Result<JLongArray<'local>, Failure> {
    let category = category_arg(env, &category)?;
    let info = service(handle)?.pool_info(&category)?;
    // Layout read by io.zooid.PoolInfo: bounds start, bounds end, version, bytes, legacy (0/1),
    // free count, then the free ranges as start/end pairs.
    let mut values = vec![
        info.bounds.start(),
        info.bounds.end(),
        i64::from(info.version),
        i64::try_from(info.bytes).unwrap_or(i64::MAX),
        i64::from(info.legacy),
        long(info.free_count),
    ];
    values.extend(info.free.iter().flat_map(|r| [r.start(), r.end()]));
    Ok(long_array(env, &values)?)
}
