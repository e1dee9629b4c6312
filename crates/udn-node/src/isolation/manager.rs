//! [`HostIsolation`]: sets the chain up, keeps the six sets equal to what the node's
//! primary-UDN pods want (one transaction per change, the cache updated only after it
//! succeeded), and keeps the kubelet rule loaded for the kubelet's current cgroup.

use std::collections::BTreeSet;

use super::cgroup::{CgroupFs, KubeletCgroup, KubeletCgroupOutcome, find_kubelet_cgroup};
use super::config::IsolationConfig;
use super::elements::{ElementIndex, pod_transaction, sync_transaction};
use super::error::IsolationError;
use super::names::{CHAIN, table_id};
use super::pod::{PodIsolationInput, PodKey, desired_pod_elements};
use super::rules::{ChainSpec, KubeletRule, chain_transaction, cleanup_transaction};
use super::systemd::{UnitWatch, unit_of_cgroup};
use super::triggers::{ReloadTrigger, ReloadTriggers};
use super::warning::{IsolationWarning, ProbesNotSupported, RestartTrackingUnavailable};
use crate::nft::listing::{CgroupTarget, cgroupv2_matches, chain_rules};
use crate::nft::{ListTarget, NftExecutor, is_unresolved_cgroup_path, probe_socket_cgroupv2};

/// Host isolation of primary-UDN pods, started.
#[derive(Debug)]
pub struct HostIsolation<E> {
    exec: E,
    spec: ChainSpec,
    kubelet: Option<KubeletCgroup>,
    /// The kubelet cgroup's id when the rule was last loaded (`None`: unknown).
    loaded_cgroup_id: Option<u64>,
    index: ElementIndex,
}

/// What [`HostIsolation::start`] gives the agent.
#[derive(Debug)]
pub struct Started<E> {
    /// The manager.
    pub isolation: HostIsolation<E>,
    /// Warning Events to post on the Node, once.
    pub warnings: Vec<IsolationWarning>,
    /// When to call [`HostIsolation::handle`].
    pub triggers: ReloadTriggers,
}

/// Why the chain (with the kubelet rule) was reloaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReloadReason {
    /// systemd reported kubelet active again.
    KubeletRestarted,
    /// The connection to systemd came back (a restart may have been missed).
    TrackingResumed,
    /// The chain is gone.
    ChainMissing,
    /// The chain does not have the rules we loaded.
    RulesChanged {
        /// How many rules it has.
        found: usize,
        /// How many we loaded.
        expected: usize,
    },
    /// nft prints a cgroup id it cannot resolve: that cgroup is gone.
    Unresolved {
        /// The id in the rule.
        id: u64,
    },
    /// The kubelet cgroup is not the one the rule was loaded for (recreated, or gone).
    CgroupChanged {
        /// Its id when the rule was loaded.
        loaded: Option<u64>,
        /// Its id now.
        now: Option<u64>,
    },
}

/// What a check of the kubelet rule found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleCheck {
    /// The chain is as loaded.
    Current,
    /// It has been reloaded.
    Reloaded(ReloadReason),
}

impl<E: NftExecutor> HostIsolation<E> {
    /// Starts on this host's `/sys/fs/cgroup`. See [`HostIsolation::start_with`].
    pub async fn start(config: &IsolationConfig, exec: E) -> Result<Started<E>, IsolationError> {
        Self::start_with(config, exec, &CgroupFs::system()).await
    }

    /// Finds the kubelet cgroup on `cgroups`, checks that nft can match it, sets up the
    /// chain and sets, and subscribes to kubelet restarts. Only a rejected
    /// `kubelet-cgroup-path` or an nft failure setting up the chain is an error; everything
    /// that only costs the kubelet rule or restart tracking is a warning.
    pub async fn start_with(
        config: &IsolationConfig,
        exec: E,
        cgroups: &CgroupFs,
    ) -> Result<Started<E>, IsolationError> {
        let node = config.node_name.as_str();
        let mut warnings = Vec::new();
        let outcome = find_kubelet_cgroup(
            cgroups,
            config.kubelet_cgroup_path.as_deref(),
            config.kubelet_cgroup_search_dir.as_deref(),
        )?;
        let kubelet = match outcome {
            KubeletCgroupOutcome::Found(kubelet) => {
                match probe_socket_cgroupv2(&exec, kubelet.level, &kubelet.nft_path).await {
                    Ok(()) => Some(kubelet),
                    Err(error) => {
                        warnings.push(probe_refusal(&kubelet, &error).warning(node));
                        None
                    }
                }
            }
            KubeletCgroupOutcome::NotSupported(reason) => {
                warnings.push(reason.warning(node));
                None
            }
        };
        for warning in &warnings {
            tracing::warn!(reason = %warning.reason, message = %warning.message, "host isolation degraded");
        }
        let spec = ChainSpec {
            ipv4: config.ipv4,
            ipv6: config.ipv6,
            kubelet: kubelet.as_ref().map(|k| KubeletRule {
                level: k.level,
                path: k.nft_path.clone(),
            }),
        };
        let mut isolation = Self {
            exec,
            spec,
            kubelet,
            loaded_cgroup_id: None,
            index: ElementIndex::default(),
        };
        isolation.load_chain().await?;
        tracing::info!(
            kubelet_cgroup = isolation.kubelet.as_ref().map(|k| k.nft_path.as_str()),
            level = isolation.kubelet.as_ref().map(|k| k.level),
            layout = ?cgroups.layout,
            "host isolation chain set up"
        );
        let watch = match &isolation.kubelet {
            Some(kubelet) => match restart_watch(config, kubelet).await {
                Ok(watch) => Some((watch, config.systemd_socket.clone())),
                Err(reason) => {
                    let warning = reason.warning(node);
                    tracing::warn!(reason = %warning.reason, message = %warning.message, "kubelet restarts not tracked");
                    warnings.push(warning);
                    None
                }
            },
            None => None,
        };
        let triggers = ReloadTriggers::new(watch, config.rule_check_interval);
        Ok(Started {
            isolation,
            warnings,
            triggers,
        })
    }

    /// The kubelet cgroup the rule matches, `None` when the rule is not installed.
    pub fn kubelet_cgroup(&self) -> Option<&KubeletCgroup> {
        self.kubelet.as_ref()
    }

    /// The chain's rules as loaded.
    pub fn rules(&self) -> Vec<String> {
        self.spec.rules()
    }

    /// Which pods want which elements (as applied).
    pub fn index(&self) -> &ElementIndex {
        &self.index
    }

    /// The executor.
    pub fn executor(&self) -> &E {
        &self.exec
    }

    async fn load_chain(&mut self) -> Result<(), IsolationError> {
        let before = self.kubelet.as_ref().and_then(KubeletCgroup::current_id);
        self.exec
            .run(&chain_transaction(&self.spec))
            .await
            .map_err(IsolationError::nft("set up the udn-isolation chain"))?;
        let after = self.kubelet.as_ref().and_then(KubeletCgroup::current_id);
        // Recreated while loading: which one nft resolved is unknown, so the next check
        // reloads.
        self.loaded_cgroup_id = before.filter(|_| before == after);
        Ok(())
    }

    /// The initial (or a full) sync: the sets become exactly what `pods` want, in one
    /// transaction. Pods host isolation leaves alone are skipped.
    pub async fn sync(&mut self, pods: &[PodIsolationInput]) -> Result<(), IsolationError> {
        let index = ElementIndex::from_inputs(pods);
        self.exec
            .run(&sync_transaction(&index))
            .await
            .map_err(IsolationError::nft("sync the pod sets"))?;
        tracing::info!(
            pods = index.pods().count(),
            elements = index.elements().count(),
            "host isolation sets synced"
        );
        self.index = index;
        Ok(())
    }

    /// A pod was added or changed. Returns whether nft was changed. A pod host isolation
    /// leaves alone (host network, not primary UDN, no IP yet) keeps what it had.
    pub async fn update_pod(&mut self, pod: &PodIsolationInput) -> Result<bool, IsolationError> {
        match desired_pod_elements(pod) {
            Some(elements) => self.apply_pod(&pod.key, elements).await,
            None => Ok(false),
        }
    }

    /// A pod was deleted: its elements go, except those another pod still wants.
    pub async fn remove_pod(&mut self, key: &PodKey) -> Result<bool, IsolationError> {
        self.apply_pod(key, BTreeSet::new()).await
    }

    async fn apply_pod(
        &mut self,
        key: &PodKey,
        elements: BTreeSet<super::pod::IsolationElement>,
    ) -> Result<bool, IsolationError> {
        let Some(plan) = self.index.plan_pod(key, elements) else {
            return Ok(false);
        };
        let tx = pod_transaction(&plan);
        self.exec
            .run(&tx)
            .await
            .map_err(IsolationError::nft("update the pod sets"))?;
        tracing::debug!(pod = %key, added = plan.add.len(), deleted = plan.delete.len(), "host isolation pod elements updated");
        self.index.commit(&plan);
        Ok(!tx.is_empty())
    }

    /// Reloads the chain (and with it the kubelet rule, resolved again by nft).
    pub async fn reload_kubelet_rule(&mut self) -> Result<(), IsolationError> {
        self.load_chain().await?;
        tracing::info!(
            kubelet_cgroup = self.kubelet.as_ref().map(|k| k.nft_path.as_str()),
            cgroup_id = self.loaded_cgroup_id,
            "host isolation kubelet rule reloaded"
        );
        Ok(())
    }

    /// Why the loaded chain is stale, `None` when it is current: the chain or its rules are
    /// not as loaded, nft prints a cgroup id instead of a path, or the kubelet cgroup's id
    /// is not the one it had when the rule was loaded.
    pub async fn stale_reason(&self) -> Result<Option<ReloadReason>, IsolationError> {
        let listing = self
            .exec
            .list(&ListTarget::Chain(table_id(), CHAIN.to_owned()))
            .await
            .map_err(IsolationError::nft("list the udn-isolation chain"))?;
        let Some(rules) = listing.as_deref().and_then(|text| chain_rules(text, CHAIN)) else {
            return Ok(Some(ReloadReason::ChainMissing));
        };
        let expected = self.spec.rules().len();
        if rules.len() != expected {
            return Ok(Some(ReloadReason::RulesChanged {
                found: rules.len(),
                expected,
            }));
        }
        let unresolved = rules
            .iter()
            .flat_map(|rule| cgroupv2_matches(rule))
            .find_map(|found| match found.target {
                CgroupTarget::Unresolved(id) => Some(id),
                CgroupTarget::Path(_) => None,
            });
        if let Some(id) = unresolved {
            return Ok(Some(ReloadReason::Unresolved { id }));
        }
        // On a hybrid host nft's id-to-path lookup also walks the v1 trees, so a stale id
        // can print as some unrelated v1 path: compare ids instead of printed paths.
        if let Some(kubelet) = &self.kubelet {
            let now = kubelet.current_id();
            if now.is_none() || now != self.loaded_cgroup_id {
                return Ok(Some(ReloadReason::CgroupChanged {
                    loaded: self.loaded_cgroup_id,
                    now,
                }));
            }
        }
        Ok(None)
    }

    /// Checks the loaded chain and reloads it when stale.
    pub async fn check_kubelet_rule(&mut self) -> Result<RuleCheck, IsolationError> {
        match self.stale_reason().await? {
            None => Ok(RuleCheck::Current),
            Some(reason) => {
                tracing::warn!(reason = ?reason, "host isolation chain stale, reloading");
                self.reload_kubelet_rule().await?;
                Ok(RuleCheck::Reloaded(reason))
            }
        }
    }

    /// Acts on a trigger from [`Started::triggers`].
    pub async fn handle(&mut self, trigger: ReloadTrigger) -> Result<RuleCheck, IsolationError> {
        match trigger {
            ReloadTrigger::PeriodicCheck => self.check_kubelet_rule().await,
            ReloadTrigger::KubeletRestarted => {
                self.reload_kubelet_rule().await?;
                Ok(RuleCheck::Reloaded(ReloadReason::KubeletRestarted))
            }
            ReloadTrigger::TrackingResumed => {
                self.reload_kubelet_rule().await?;
                Ok(RuleCheck::Reloaded(ReloadReason::TrackingResumed))
            }
        }
    }
}

/// Why the `-c` check of the kubelet rule failed, as a warning reason.
fn probe_refusal(kubelet: &KubeletCgroup, error: &crate::nft::NftError) -> ProbesNotSupported {
    if is_unresolved_cgroup_path(error) {
        ProbesNotSupported::Unresolvable {
            path: kubelet.nft_path.clone(),
            nft_message: error.nft_message().unwrap_or_default().to_owned(),
        }
    } else {
        ProbesNotSupported::SocketUnsupported {
            nft_message: error
                .nft_message()
                .map_or_else(|| error.to_string(), str::to_owned),
        }
    }
}

async fn restart_watch(
    config: &IsolationConfig,
    kubelet: &KubeletCgroup,
) -> Result<UnitWatch, RestartTrackingUnavailable> {
    let component = kubelet.last_component();
    let Some(unit) = unit_of_cgroup(component) else {
        return Err(RestartTrackingUnavailable::NoUnit {
            path: kubelet.nft_path.clone(),
            component: component.to_owned(),
        });
    };
    UnitWatch::connect(&config.systemd_socket, unit).await
}

/// Removes the chain and the six sets, whether or not they exist (the table stays).
pub async fn cleanup(exec: &impl NftExecutor) -> Result<(), IsolationError> {
    exec.run(&cleanup_transaction())
        .await
        .map_err(IsolationError::nft(
            "remove the udn-isolation chain and sets",
        ))
}
