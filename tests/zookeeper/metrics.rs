//! The service's statistics and metrics under the faults they count: version conflicts from a
//! second client, a lost reply through the fault proxy, a session lost to a partition; and the
//! tracing span every operation runs in.

use zooid::CategorySpec;
use zooid_test_support as support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use support::{op, FaultProxy, ZkServer};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use zooid::{ConnectOptions, IdCategory, IdGeneratorService, ServiceOptions};

fn options(session_ms: u64) -> ConnectOptions {
    ConnectOptions {
        session_timeout: Duration::from_millis(session_ms),
        digest_auth: None,
        ..ConnectOptions::default()
    }
}

/// The process-wide Prometheus recorder of this test binary, installed once.
fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        PrometheusBuilder::new()
            .install_recorder()
            .expect("install the recorder")
    })
}

/// The value of the sample `name{labels}` in Prometheus text, where every given label matches.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .find(|line| {
            labels
                .iter()
                .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// Conflicts, a lost reply resolved as applied, a session lost to a partition: each counted
/// once in the snapshot and in the facade, with the fault proven by the proxy's own counters.
#[test]
fn stats_count_conflicts_lost_replies_and_session_losses() {
    support::init_tracing();
    let metrics = prometheus();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let svc = IdGeneratorService::connect(
            &proxy.connect_string(),
            &options(2000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let other = IdGeneratorService::connect(
            &zk.connect_string(),
            &options(4000),
            ServiceOptions::default(),
        )
        .await
        .unwrap();
        let cat = IdCategory::new("/metrics/did").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1_000_000).single_node())
            .await
            .unwrap();
        svc.take_ids(&cat, 10).await.unwrap();

        // Another client moves the pool: this service's remembered version is stale.
        other.take_ids(&cat, 5).await.unwrap();
        let ids = svc.take_ids(&cat, 20).await.unwrap();
        assert_eq!(ids.count_ids(), 20);

        // A reply lost after the server applied the take: resolved as applied, nothing leaked.
        proxy.drop_reply_to(op::SET_DATA, "/metrics/did");
        let lost = svc.take_ids(&cat, 100).await.unwrap();
        assert_eq!(proxy.dropped_replies(), 1, "the fault must have happened");
        assert_eq!(lost.count_ids(), 100);

        let mut back = ids;
        svc.push_ids(&mut back).await.unwrap();

        // A partition longer than the session: the session is lost and replaced.
        // Waits for the new session before the next take, so that no write is in flight
        // during the partition (its reply would be one more lost reply).
        let mut status = svc.zookeeper().unwrap().subscribe();
        proxy.blackhole_then_close(Duration::from_millis(5000));
        tokio::time::timeout(
            Duration::from_secs(30),
            status.wait_for(|s| s.generation == 2 && s.state == zooid::ConnectionState::Connected),
        )
        .await
        .expect("a new session within 30 s")
        .unwrap();
        svc.take_ids(&cat, 1).await.unwrap();
        assert!(
            proxy.stats().blackholes >= 1,
            "the partition must have happened"
        );

        let stats = svc.stats();
        eprintln!("stats: {stats:#?}");
        assert_eq!((stats.takes, stats.ids_taken), (4, 131));
        assert_eq!((stats.pushes, stats.ids_pushed), (1, 20));
        assert_eq!(stats.version_conflicts, 1, "one stale write");
        assert!(stats.retries >= 1);
        assert_eq!(
            (
                stats.lost_replies,
                stats.lost_applied,
                stats.lost_not_applied,
                stats.lost_unknown
            ),
            (1, 1, 0, 0)
        );
        assert_eq!(stats.ids_leaked, 0);
        assert_eq!((stats.session_losses, stats.session_generation), (1, 2));
        assert_eq!(stats.latency.count, 5, "takes and pushes are timed");
        assert_eq!(stats.latency.counts.iter().sum::<u64>(), 5);
        assert!(stats.latency.max_us > 0);
        let pool = &stats.categories[0];
        assert_eq!(pool.category, "/metrics/did");
        // Taken: 1-10 (svc), 11-15 (other), 16-35, 36-135, then 20 pushed back; 16 is taken last.
        let info = other.pool_info(&cat).await.unwrap();
        assert_eq!(
            pool.free_ids, info.free_count,
            "the last state seen is the pool's"
        );
        assert_eq!(pool.ranges, info.free.len() as u64);
        assert_eq!(pool.node_bytes, info.bytes as u64);
        assert_eq!(
            pool.node_bytes_limit,
            ServiceOptions::default().max_pool_bytes as u64
        );
        assert_eq!(pool.ceiling_headroom, None);

        // The facade is process-wide: it also counts the other service's take of 5.
        let text = metrics.render();
        let c = ("category", "/metrics/did");
        assert_eq!(sample(&text, "zooid_ids_taken_total", &[c]), Some(136.0));
        assert_eq!(sample(&text, "zooid_ids_pushed_total", &[c]), Some(20.0));
        assert_eq!(
            sample(&text, "zooid_version_conflicts_total", &[c]),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                "zooid_lost_replies_total",
                &[c, ("resolution", "applied")]
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                "zooid_ops_total",
                &[c, ("op", "take"), ("outcome", "ok")]
            ),
            Some(5.0)
        );
        // Process-wide, unlabelled: the other tests of this binary may lose sessions too.
        let losses = sample(&text, "zooid_session_losses_total", &[]).unwrap_or(0.0);
        assert!(losses >= 1.0, "{losses}");
        assert_eq!(
            sample(&text, "zooid_pool_free_ids", &[c]),
            Some(pool.free_ids as f64)
        );
        let timed = sample(&text, "zooid_op_duration_seconds_count", &[("op", "take")]);
        assert!(timed.unwrap_or(0.0) >= 5.0, "{timed:?}");
    });
}

/// A lost reply that cannot be resolved (the server stays unreachable past the deadline) is
/// counted as unknown, with the IDs it leaked.
#[test]
fn unresolved_lost_reply_counts_leaked_ids() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut service_options = ServiceOptions::default();
        service_options.retry.deadline = Duration::from_millis(1500);
        let svc =
            IdGeneratorService::connect(&proxy.connect_string(), &options(4000), service_options)
                .await
                .unwrap();
        let cat = IdCategory::new("/metrics/leak").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1000).single_node())
            .await
            .unwrap();
        // The take's reply is lost and the proxy goes dark for longer than the take can wait
        // (its request timeout of one session, 4 s, plus the resolution deadline, 1.5 s, plus
        // one more request timeout at most), so nothing heals before the outcome is given up.
        proxy.drop_reply_to(op::SET_DATA, "/metrics/leak");
        let take = svc.take_ids(&cat, 7);
        let cut = async {
            while proxy.dropped_replies() == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            proxy.blackhole_for(Duration::from_secs(12));
        };
        let started = std::time::Instant::now();
        let (result, ()) = tokio::join!(take, cut);
        eprintln!("outcome given up after {:?}", started.elapsed());
        assert!(proxy.is_blackholed(), "the partition outlasted the take");
        assert_eq!(proxy.dropped_replies(), 1, "the fault must have happened");
        let err = result.expect_err("the outcome cannot be told");
        assert!(
            matches!(err, zooid::ZooidError::OutcomeUnknown { .. }),
            "{err}"
        );
        let stats = svc.stats();
        assert_eq!((stats.lost_replies, stats.lost_unknown), (1, 1));
        assert_eq!(stats.ids_leaked, 7);
        assert_eq!((stats.takes, stats.failed_ops), (0, 1));
    });
}

/// The fields of every `zooid_op` span, as last recorded.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<HashMap<u64, HashMap<String, String>>>>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_string(),
            format!("{value:?}").trim_matches('"').to_string(),
        );
    }
}

impl<S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>> Layer<S>
    for Spans
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        if attrs.metadata().name() == "zooid_op" {
            let mut fields = HashMap::new();
            attrs.record(&mut Fields(&mut fields));
            self.0.lock().unwrap().insert(id.into_u64(), fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some(fields) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
}

/// Every operation runs in a `zooid_op` span with its category, op, attempt and outcome; a
/// version conflict shows as a second attempt, a failure as its kind.
#[test]
fn operations_run_in_spans_with_attempt_and_outcome() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let a = IdGeneratorService::connect("mem:spans", &options(1000), ServiceOptions::default())
            .await
            .unwrap();
        let b = IdGeneratorService::connect("mem:spans", &options(1000), ServiceOptions::default())
            .await
            .unwrap();
        let cat = IdCategory::new("/spans/did").unwrap();
        a.create_category(&cat, &CategorySpec::new(1, 100).single_node())
            .await
            .unwrap();
        a.take_ids(&cat, 10).await.unwrap();
        b.take_ids(&cat, 10).await.unwrap();
        a.take_ids(&cat, 10).await.unwrap(); // conflicts once: a remembered version 1
        let missing = IdCategory::new("/spans/missing").unwrap();
        assert!(a.take_ids(&missing, 1).await.is_err());
        assert_eq!(a.stats().version_conflicts, 1);
    });
    let mut seen: Vec<_> = spans.0.lock().unwrap().drain().collect();
    seen.sort_by_key(|(id, _)| *id);
    let rows: Vec<(String, String, String, String)> = seen
        .into_iter()
        .map(|(_, f)| {
            let get = |k: &str| f.get(k).cloned().unwrap_or_default();
            (get("category"), get("op"), get("attempt"), get("outcome"))
        })
        .collect();
    let row = |c: &str, o: &str, a: &str, out: &str| {
        (c.to_string(), o.to_string(), a.to_string(), out.to_string())
    };
    assert_eq!(
        rows,
        vec![
            row("/spans/did", "create", "1", "ok"),
            row("/spans/did", "take", "1", "ok"),
            row("/spans/did", "take", "1", "ok"),
            row("/spans/did", "take", "2", "ok"),
            row("/spans/missing", "take", "1", "not_found"),
        ]
    );
}

/// A category with a durable ceiling reports its headroom (the free IDs a take may still hand
/// out at or below the ceiling) in the snapshot and as a gauge.
#[test]
fn ceiling_headroom_is_reported() {
    let metrics = prometheus();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let svc =
            IdGeneratorService::connect("mem:headroom", &options(1000), ServiceOptions::default())
                .await
                .unwrap();
        let cat = IdCategory::new("/metrics/ceiling").unwrap();
        svc.create_category(&cat, &CategorySpec::new(1, 1000).ceiling(100))
            .await
            .unwrap();
        svc.take_ids(&cat, 30).await.unwrap();
        let stats = svc.stats();
        let pool = stats
            .categories
            .iter()
            .find(|c| c.category == "/metrics/ceiling")
            .unwrap();
        assert_eq!(
            pool.ceiling_headroom,
            Some(70),
            "IDs 31..=100 remain below the ceiling"
        );
        let text = metrics.render();
        assert_eq!(
            sample(
                &text,
                "zooid_pool_ceiling_headroom",
                &[("category", "/metrics/ceiling")]
            ),
            Some(70.0)
        );
    });
}
