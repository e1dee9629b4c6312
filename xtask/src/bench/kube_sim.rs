//! `cargo xtask bench kube-sim`: objects/s written to the in-memory API server and watch
//! events/s delivered to concurrent watchers.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use serde_json::json;
use udn_kube_sim::{
    ListOptions, ResourceKey, Sim, SimConfig, WatchEventType, WatchOptions, WriteOptions,
};

/// Figures of one run.
#[derive(Debug)]
pub struct Figures {
    /// Objects written.
    pub objects: usize,
    /// Concurrent watchers.
    pub watchers: usize,
    /// Seconds to write every object.
    pub write_s: f64,
    /// Seconds from the first write until every watcher saw every object.
    pub deliver_s: f64,
    /// Peak RSS of the process, MiB.
    pub rss_mb: f64,
}

impl Figures {
    /// Objects written per second.
    pub fn objects_per_s(&self) -> f64 {
        self.objects as f64 / self.write_s
    }

    /// Watch events delivered per second, all watchers together.
    pub fn events_per_s(&self) -> f64 {
        (self.objects * self.watchers) as f64 / self.deliver_s
    }

    /// The one-line summary.
    pub fn line(&self) -> String {
        format!(
            "kube-sim-bench objects={} watchers={} write_s={:.3} objects_per_s={:.0} deliver_s={:.3} events_per_s={:.0} rss_mb={:.1}",
            self.objects,
            self.watchers,
            self.write_s,
            self.objects_per_s(),
            self.deliver_s,
            self.events_per_s(),
            self.rss_mb
        )
    }
}

fn pods() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "pods".to_owned(),
    }
}

/// Run the benchmark.
pub fn run(objects: usize, watchers: usize) -> anyhow::Result<Figures> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(measure(objects, watchers))
}

async fn measure(objects: usize, watchers: usize) -> anyhow::Result<Figures> {
    let sim = Sim::new(SimConfig {
        watch_history: objects * 2 + 16,
        ..SimConfig::default()
    });
    let namespaces = ResourceKey {
        group: String::new(),
        plural: "namespaces".to_owned(),
    };
    sim.create(
        &namespaces,
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}),
        &WriteOptions::default(),
    )
    .context("creating the namespace")?;
    let from = sim.resource_version().to_string();
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let opts = WatchOptions {
            resource_version: Some(from.clone()),
            list: ListOptions::default(),
            ..WatchOptions::default()
        };
        let mut stream = sim
            .watch(&pods(), Some("bench"), &opts)
            .context("starting a watch")?;
        tasks.push(tokio::spawn(async move {
            let mut added = 0;
            while added < objects {
                match stream.next().await {
                    Some(event) if event.event_type == WatchEventType::Added => added += 1,
                    Some(_) => {}
                    None => break,
                }
            }
            (added, Instant::now())
        }));
    }
    let start = Instant::now();
    for i in 0..objects {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": format!("pod-{i}"), "namespace": "bench", "labels": {"app": "bench"}},
            "spec": {"nodeName": format!("node-{}", i % 100), "containers": [{"name": "c", "image": "registry.example/app:1"}]},
        });
        sim.create(&pods(), Some("bench"), pod, &WriteOptions::default())
            .with_context(|| format!("creating pod-{i}"))?;
    }
    let write_s = start.elapsed().as_secs_f64();
    let mut last = start;
    for task in tasks {
        let (added, done) = tokio::time::timeout(Duration::from_secs(600), task)
            .await
            .context("watchers did not finish within 10 minutes")?
            .context("watcher task failed")?;
        if added < objects {
            bail!("a watcher ended after {added} of {objects} events");
        }
        last = last.max(done);
    }
    Ok(Figures {
        objects,
        watchers,
        write_s,
        deliver_s: (last - start).as_secs_f64(),
        rss_mb: super::peak_rss_mb().unwrap_or(0.0),
    })
}

/// Run, print and record in `docs/benchmarks.md`.
pub fn run_and_record(root: &Path, objects: usize, watchers: usize) -> anyhow::Result<()> {
    let figures = run(objects, watchers)?;
    let body = format!(
        "`cargo xtask bench kube-sim --objects {objects} --watchers {watchers}`, measured {date}: \
         {objects} Pods created one by one through `Sim::create` while {watchers} watches \
         (started before the first write) each receive every ADDED event.\n\n\
         | objects | watchers | write s | objects/s | delivered s | watch events/s | peak RSS MiB |\n\
         |---|---|---|---|---|---|---|\n\
         | {objects} | {watchers} | {:.3} | {:.0} | {:.3} | {:.0} | {:.1} |\n\n\
         `{}`\n",
        figures.write_s,
        figures.objects_per_s(),
        figures.deliver_s,
        figures.events_per_s(),
        figures.rss_mb,
        figures.line(),
        date = jiff::Zoned::now().date(),
    );
    super::record(
        root,
        "kube-sim",
        "In-memory API server (udn-kube-sim)",
        &body,
    )?;
    #[allow(clippy::print_stdout)] // the benchmark's output is its figures
    {
        println!("{}", figures.line());
    }
    Ok(())
}
