// Code generated for the move of the plain types to entry, coverage and denial; DO NOT EDIT.

package enforcer

import (
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
)

// The old names of what moved, until every caller is rewritten
// (the rename commit that follows removes this file).

var AllHooks = denial.AllHooks
var AllRules = denial.AllRules
var CapabilityName = denial.CapabilityName
var CheckWriteRoots = entry.CheckWriteRoots

type Coverage = coverage.Coverage

const CoverageFull = coverage.StateFull
const CoverageNone = coverage.StateNone
const CoveragePartial = coverage.StatePartial

type Denial = denial.Denial
type DenialKey = denial.Key
type Device = entry.Device

var DeviceOf = entry.DeviceOf

type Entry = entry.Entry

var ErrBadDevices = entry.ErrBadDevices
var ErrBadEndpoints = entry.ErrBadEndpoints
var ErrBadWriteRoot = entry.ErrBadWriteRoot
var ErrCannotEnforce = coverage.ErrCannotEnforce
var ErrPartialCoverage = coverage.ErrPartial
var FamilyName = denial.FamilyName

type FieldCoverage = coverage.Field
type FileID = entry.FileID

var FileIDOf = entry.FileIDOf
var FileIDOfStat = entry.FileIDOfStat
var FilesystemName = denial.FilesystemName

type Gap = coverage.Gap

const GapNetwork = coverage.GapNetwork
const GapNetworkEndpoints = coverage.GapNetworkEndpoints
const GapNetworkNonInet = coverage.GapNetworkNonInet
const GapNetworkUnix = coverage.GapNetworkUnix
const GapShell = coverage.GapShell
const GapShellCodeMapping = coverage.GapShellCodeMapping
const GapShellReadOnly = coverage.GapShellReadOnly
const GapTamper = coverage.GapTamper
const GapWrite = coverage.GapWrite
const GapWriteInheritedFDs = coverage.GapWriteInheritedFDs
const GapWriteTruncate = coverage.GapWriteTruncate

type Hook = denial.Hook

const HookBPF = denial.HookBPF
const HookBprmCheckSecurity = denial.HookBprmCheckSecurity
const HookBprmCommittedCreds = denial.HookBprmCommittedCreds

var HookByName = denial.HookByName

const HookCapable = denial.HookCapable
const HookCgroupConnect4 = denial.HookCgroupConnect4
const HookCgroupConnect6 = denial.HookCgroupConnect6
const HookCgroupSendmsg4 = denial.HookCgroupSendmsg4
const HookCgroupSendmsg6 = denial.HookCgroupSendmsg6
const HookCgroupSockCreate = denial.HookCgroupSockCreate
const HookDInstantiate = denial.HookDInstantiate
const HookFileFcntl = denial.HookFileFcntl
const HookFileIoctl = denial.HookFileIoctl
const HookFileIoctlCompat = denial.HookFileIoctlCompat
const HookFileLock = denial.HookFileLock
const HookFileMprotect = denial.HookFileMprotect
const HookFileOpen = denial.HookFileOpen
const HookFilePermission = denial.HookFilePermission
const HookFileSendSigiotask = denial.HookFileSendSigiotask
const HookFileTruncate = denial.HookFileTruncate
const HookIPCPermission = denial.HookIPCPermission
const HookInodeAllocSecurity = denial.HookInodeAllocSecurity
const HookInodeCreate = denial.HookInodeCreate
const HookInodeFreeSecurity = denial.HookInodeFreeSecurity
const HookInodeLink = denial.HookInodeLink
const HookInodeMkdir = denial.HookInodeMkdir
const HookInodeMknod = denial.HookInodeMknod
const HookInodePermission = denial.HookInodePermission
const HookInodeRemoveACL = denial.HookInodeRemoveACL
const HookInodeRemovexattr = denial.HookInodeRemovexattr
const HookInodeRename = denial.HookInodeRename
const HookInodeRmdir = denial.HookInodeRmdir
const HookInodeSetACL = denial.HookInodeSetACL
const HookInodeSetattr = denial.HookInodeSetattr
const HookInodeSetxattr = denial.HookInodeSetxattr
const HookInodeSymlink = denial.HookInodeSymlink
const HookInodeUnlink = denial.HookInodeUnlink
const HookKernelModuleRequest = denial.HookKernelModuleRequest
const HookKeyAlloc = denial.HookKeyAlloc
const HookKeyFree = denial.HookKeyFree
const HookKeyPermission = denial.HookKeyPermission
const HookMmapFile = denial.HookMmapFile
const HookMoveMount = denial.HookMoveMount
const HookMsgQueueAllocSecurity = denial.HookMsgQueueAllocSecurity
const HookMsgQueueAssociate = denial.HookMsgQueueAssociate
const HookMsgQueueFreeSecurity = denial.HookMsgQueueFreeSecurity
const HookMsgQueueMsgctl = denial.HookMsgQueueMsgctl
const HookPathTruncate = denial.HookPathTruncate
const HookPtraceAccessCheck = denial.HookPtraceAccessCheck
const HookPtraceTraceme = denial.HookPtraceTraceme
const HookSbMount = denial.HookSbMount
const HookSbPivotroot = denial.HookSbPivotroot
const HookSbRemount = denial.HookSbRemount
const HookSbUmount = denial.HookSbUmount
const HookSemAllocSecurity = denial.HookSemAllocSecurity
const HookSemAssociate = denial.HookSemAssociate
const HookSemFreeSecurity = denial.HookSemFreeSecurity
const HookSemSemctl = denial.HookSemSemctl
const HookShmAllocSecurity = denial.HookShmAllocSecurity
const HookShmAssociate = denial.HookShmAssociate
const HookShmFreeSecurity = denial.HookShmFreeSecurity
const HookShmShmat = denial.HookShmShmat
const HookShmShmctl = denial.HookShmShmctl
const HookSocketAccept = denial.HookSocketAccept
const HookSocketBind = denial.HookSocketBind
const HookSocketConnect = denial.HookSocketConnect
const HookSocketCreate = denial.HookSocketCreate
const HookSocketGetsockopt = denial.HookSocketGetsockopt
const HookSocketListen = denial.HookSocketListen
const HookSocketRecvmsg = denial.HookSocketRecvmsg
const HookSocketSendmsg = denial.HookSocketSendmsg
const HookSocketSetsockopt = denial.HookSocketSetsockopt
const HookSocketShutdown = denial.HookSocketShutdown

type HookStatus = coverage.HookStatus

const HookTaskAlloc = denial.HookTaskAlloc
const HookTaskKill = denial.HookTaskKill
const HookTaskPrctl = denial.HookTaskPrctl
const HookTaskPrlimit = denial.HookTaskPrlimit
const HookTaskSetioprio = denial.HookTaskSetioprio
const HookTaskSetnice = denial.HookTaskSetnice
const HookTaskSetrlimit = denial.HookTaskSetrlimit
const HookTaskSetscheduler = denial.HookTaskSetscheduler
const HookUnixMaySend = denial.HookUnixMaySend
const HookUnixStreamConnect = denial.HookUnixStreamConnect
const HookUringCmd = denial.HookUringCmd

type HostMechanisms = coverage.HostMechanisms
type Layer = coverage.Layer

const LayerCgroup = coverage.LayerCgroup
const LayerLSM = coverage.LayerLSM
const LayerLifecycle = coverage.LayerLifecycle
const MaxAllowDevices = entry.MaxAllowDevices
const MaxEndpoints = entry.MaxEndpoints
const MaxTerminals = entry.MaxTerminals
const MaxWriteRoots = entry.MaxWriteRoots
const MechBPFLSM = coverage.MechBPFLSM
const MechCgroupBPF = coverage.MechCgroupBPF
const MechContainerSpec = coverage.MechContainerSpec
const MechLandlock = coverage.MechLandlock
const MechSeccomp = coverage.MechSeccomp

type Object = denial.Object

const ObjectBPFCmd = denial.ObjectBPFCmd
const ObjectCap = denial.ObjectCap
const ObjectCgroup = denial.ObjectCgroup
const ObjectFS = denial.ObjectFS
const ObjectFile = denial.ObjectFile

type ObjectKind = denial.ObjectKind

const ObjectMount = denial.ObjectMount
const ObjectNone = denial.ObjectNone
const ObjectSocket = denial.ObjectSocket
const ObjectTask = denial.ObjectTask

var PartialRefused = coverage.PartialRefused
var ProbeHost = coverage.ProbeHost

type ProcessLayer = coverage.ProcessLayer
type Rule = denial.Rule

const RuleBPFSyscall = denial.RuleBPFSyscall
const RuleCapability = denial.RuleCapability
const RuleCgroupOutside = denial.RuleCgroupOutside
const RuleCgroupOwnLimits = denial.RuleCgroupOwnLimits
const RuleCodeMapping = denial.RuleCodeMapping
const RuleConsoleEgress = denial.RuleConsoleEgress
const RuleCoreDumpLimit = denial.RuleCoreDumpLimit
const RuleExecOpen = denial.RuleExecOpen
const RuleHostDevice = denial.RuleHostDevice
const RuleIPCOutside = denial.RuleIPCOutside
const RuleKernelAttr = denial.RuleKernelAttr
const RuleKernelModule = denial.RuleKernelModule
const RuleKernelSetting = denial.RuleKernelSetting
const RuleKeyOutside = denial.RuleKeyOutside
const RuleKeyRequestAuth = denial.RuleKeyRequestAuth
const RuleKmsg = denial.RuleKmsg
const RuleMount = denial.RuleMount
const RuleNetwork = denial.RuleNetwork
const RuleOwnerUnrecorded = denial.RuleOwnerUnrecorded
const RulePinRemoval = denial.RulePinRemoval
const RuleProcOutside = denial.RuleProcOutside
const RuleProcPIDFile = denial.RuleProcPIDFile
const RuleProcessOutside = denial.RuleProcessOutside
const RulePtraceOutside = denial.RulePtraceOutside
const RuleRawStorage = denial.RuleRawStorage
const RuleShellNone = denial.RuleShellNone
const RuleShellPtrace = denial.RuleShellPtrace
const RuleShellReadOnly = denial.RuleShellReadOnly
const RuleSigioOwner = denial.RuleSigioOwner
const RuleSignalOutside = denial.RuleSignalOutside
const RuleTTYInject = denial.RuleTTYInject
const RuleTamper = denial.RuleTamper
const RuleTaskName = denial.RuleTaskName
const RuleTerminalOutside = denial.RuleTerminalOutside
const RuleURingCmd = denial.RuleURingCmd
const RuleWrite = denial.RuleWrite

var SockTypeName = denial.SockTypeName

type SpecLayer = coverage.SpecLayer
type Summary = denial.Summary
type Terminal = entry.Terminal

var TerminalOf = entry.TerminalOf
var WriteRootOf = entry.WriteRootOf
var WriteRootOfFile = entry.WriteRootOfFile
